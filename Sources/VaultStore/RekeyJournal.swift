import VaultCrypto
import VaultSystem

/// `rekey.journal`: the rekey's own record that it is under way, so that recovery acts on a state the
/// vault authenticated and never on bare file names (anyone who can rename `groups` to `groups.old`
/// or `master.key` to `master.key.new` would otherwise make the next open delete every item, or the
/// key).
///
/// Layout (88 bytes): "VLTR" | version u8 (1) | reserved u8×3 (0) | vault id (16) | tag under the old
/// `always` class key (32) | tag under the new one (32); each tag is a keyed BLAKE2b-256 of bytes 0–23
/// (personalisation "vault.rekey.v1"). Two tags, because the renames that finish a rekey replace the
/// old key files with the new ones: whichever key files are in place, one of them verifies.
struct RekeyJournal {
    static let fileName = "rekey.journal"
    static let magic: [UInt8] = Array("VLTR".utf8)
    static let headerByteCount = 24
    static let byteCount = headerByteCount + 64
    static let domain = KeyDerivation.Domain("vault.rekey.v1")

    let vaultID: [UInt8]

    func header() -> [UInt8] { Self.magic + [1, 0, 0, 0] + vaultID }

    func encoded(oldAlways: SecureBytes, newAlways: SecureBytes) throws(StoreError) -> [UInt8] {
        let head = header()
        do {
            return head + (try KeyDerivation.keyedHash(head, key: oldAlways, domain: Self.domain))
                + (try KeyDerivation.keyedHash(head, key: newAlways, domain: Self.domain))
        } catch {
            throw StoreError.crypto(error, "cannot authenticate the rekey journal")
        }
    }

    /// Whether `bytes` is a journal whose tag verifies under one of `keys`.
    static func isAuthentic(_ bytes: [UInt8], under keys: [SecureBytes]) -> Bool {
        guard bytes.count == byteCount, Array(bytes[0..<4]) == magic, bytes[4] == 1 else { return false }
        let head = Array(bytes[0..<headerByteCount])
        let tags = [Array(bytes[headerByteCount..<(headerByteCount + 32)]), Array(bytes[(headerByteCount + 32)...])]
        for key in keys {
            guard let expected = try? KeyDerivation.keyedHash(head, key: key, domain: domain) else { continue }
            if tags.contains(where: { ConstantTime.equals($0, expected) }) { return true }
        }
        return false
    }

    /// The `always` class keys that the key files present in `directory` give without a passphrase:
    /// from a plain `master.key` or `master.key.new`, from `always.key` or `always.key.new`, and from
    /// an external key file. A file that cannot be read gives none.
    static func availableAlwaysKeys(in directory: FileDescriptor, vaultPath: String, source: KeySource) -> [SecureBytes]
    {
        var keys: [SecureBytes] = []
        for name in [MasterKeyFile.fileName, MasterKeyFile.fileName + Rekey.newSuffix] {
            if let key = try? MasterKeyFile.readPlain(name, in: directory, vaultPath: vaultPath),
                let always = try? ClassKeys.derive(key, .always)
            {
                keys.append(always)
            }
        }
        for name in [MasterKeyFile.alwaysKeyFileName, MasterKeyFile.alwaysKeyFileName + Rekey.newSuffix] {
            if let file = try? MasterKeyFile.loadAlwaysKey(in: directory, vaultPath: vaultPath, name: name) {
                keys.append(file.always)
            }
        }
        if let keyFile = source.keyFile, let key = source.loadedKey ?? (try? MasterKeyFile.loadExternal(keyFile)),
            let always = try? ClassKeys.derive(key, .always)
        {
            keys.append(always)
        }
        return keys
    }
}
