import VaultCrypto
import VaultSystem

/// `rekey.journal`: the rekey's own record that it is under way, so that recovery acts on a state the
/// vault authenticated and never on bare file names (anyone who can rename `groups` to `groups.old`
/// or `master.key` to `master.key.new` would otherwise make the next open delete every item, or the
/// key).
///
/// Layout: a header, then two tags over it, each a keyed BLAKE2b-256 (personalisation
/// "vault.rekey.v1"), under the old `always` class key and under the new one. Two tags, because the
/// renames that finish a rekey replace the old key files with the new ones: whichever key files are
/// in place, one of them verifies. Header, version 1 (a rekey of `master.key`, 24 bytes): "VLTR" |
/// 1 | flags u8 (bit 0: a rekey in place) | reserved u8×2 (0) | vault id (16). Version 2 (a rekey to a new external key file): the same
/// with version 2, then the new key file's absolute path as len16be | UTF-8 (1–4096 bytes), so that
/// an open given neither key file can still find the new one; the path is authenticated by the tags,
/// the key itself is never in the journal.
struct RekeyJournal {
    static let fileName = "rekey.journal"
    static let magic: [UInt8] = Array("VLTR".utf8)
    static let fixedHeaderByteCount = 24
    static let tagByteCount = 32
    static let maximumPathByteCount = 4096
    /// The largest journal (version 2 with the longest path).
    static let maximumByteCount = fixedHeaderByteCount + 2 + maximumPathByteCount + 2 * tagByteCount
    static let domain = KeyDerivation.Domain("vault.rekey.v1")

    let vaultID: [UInt8]
    /// The absolute path of the new external key file (version 2); nil for a rekey of `master.key`.
    let newKeyFile: String?
    /// A rekey in place, which moves no directory (flags bit 0; `VaultStore.rekeyInPlace`).
    let inPlace: Bool

    init(vaultID: [UInt8], newKeyFile: String? = nil, inPlace: Bool = false) {
        self.vaultID = vaultID
        self.newKeyFile = newKeyFile
        self.inPlace = inPlace
    }

    func header() throws(StoreError) -> [UInt8] {
        let flags: UInt8 = inPlace ? 1 : 0
        guard let newKeyFile else { return Self.magic + [1, flags, 0, 0] + vaultID }
        let path = Array(newKeyFile.utf8)
        guard let pathCount = UInt16(exactly: path.count) else {
            throw StoreError(.invalidName, "the key file path is \(path.count) bytes; at most \(UInt16.max)")
        }
        var header = Self.magic + [2, flags, 0, 0] + vaultID
        header.appendBigEndian(pathCount)
        return header + path
    }

    /// Whether `bytes` (a journal of a version this build reads) is a rekey's in place.
    static func isInPlace(_ bytes: [UInt8]) -> Bool {
        headerByteCount(bytes) != nil && bytes[5] & 1 == 1
    }

    func encoded(oldAlways: SymmetricKey, newAlways: SymmetricKey) throws(StoreError) -> [UInt8] {
        if let newKeyFile {
            let count = newKeyFile.utf8.count
            guard count > 0, count <= Self.maximumPathByteCount else {
                throw StoreError(
                    .invalidName,
                    "the path of the new key file is \(count) bytes; a rekey journal holds 1 to "
                        + "\(Self.maximumPathByteCount)")
            }
        }
        let head = try header()
        do {
            return head + (try KeyDerivation.keyedHash(head, key: oldAlways, domain: Self.domain))
                + (try KeyDerivation.keyedHash(head, key: newAlways, domain: Self.domain))
        } catch {
            throw StoreError.crypto(error, "cannot authenticate the rekey journal")
        }
    }

    /// The length of the header of `bytes`, when it is a journal of a version this build reads.
    static func headerByteCount(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= fixedHeaderByteCount, Array(bytes[0..<4]) == magic, bytes[5] & ~1 == 0, bytes[6] == 0,
            bytes[7] == 0
        else { return nil }
        switch bytes[4] {
        case 1: return fixedHeaderByteCount
        case 2:
            guard bytes.count >= fixedHeaderByteCount + 2 else { return nil }
            let count = Int(UInt16(bigEndianBytes: bytes[fixedHeaderByteCount..<fixedHeaderByteCount + 2]))
            guard count > 0, count <= maximumPathByteCount, bytes.count >= fixedHeaderByteCount + 2 + count else {
                return nil
            }
            return fixedHeaderByteCount + 2 + count
        default: return nil
        }
    }

    /// The new key file that `bytes` names (version 2), before the journal is authenticated: only a
    /// candidate, whose key counts once a tag verifies under it.
    static func claimedNewKeyFile(_ bytes: [UInt8]) -> String? {
        guard let end = headerByteCount(bytes), end > fixedHeaderByteCount else { return nil }
        return String(validating: bytes[(fixedHeaderByteCount + 2)..<end], as: UTF8.self)
    }

    /// Whether `bytes` is a journal whose tag verifies under one of `keys`.
    static func isAuthentic(_ bytes: [UInt8], under keys: [SymmetricKey]) -> Bool {
        guard let end = headerByteCount(bytes), bytes.count == end + 2 * tagByteCount else { return false }
        let head = Array(bytes[0..<end])
        let tags = [Array(bytes[end..<(end + tagByteCount)]), Array(bytes[(end + tagByteCount)...])]
        for key in keys {
            guard let expected = try? KeyDerivation.keyedHash(head, key: key, domain: domain) else { continue }
            if tags.contains(where: { ConstantTime.equals($0, expected) }) { return true }
        }
        return false
    }

    /// The `always` class keys that the key files present give without a passphrase: from a plain
    /// `master.key` or `master.key.new` in `directory`, from `always.key` or `always.key.new`, from
    /// the external key file of `source`, and from the new key file that `journal` names (a rekey to
    /// a new key file, opened with the old one, with the new one, or with neither). A file that cannot
    /// be read, or fails the checks of a key file, gives none.
    static func availableAlwaysKeys(
        in directory: FileDescriptor, vaultPath: FilePath, source: KeySource, journal: [UInt8]
    ) -> [SymmetricKey] {
        var keys: [SymmetricKey] = []
        for name in [MasterKeyFile.fileName, MasterKeyFile.fileName + Rekey.newSuffix] {
            if let key = try? MasterKeyFile.readPlain(name, in: directory, vaultPath: vaultPath),
                let always = try? ClassKeys.derive(key, .always)
            {
                keys.append(always)
            }
        }
        for name in [AlwaysKeyFile.fileName, AlwaysKeyFile.fileName + Rekey.newSuffix] {
            if let file = try? AlwaysKeyFile.load(in: directory, vaultPath: vaultPath, name: name) {
                keys.append(file.always)
            }
        }
        // The current key file as read ahead (root reads it before it acts as the owner), then the
        // new key file a rekey journal names.
        if source.keyFile != nil, let key = source.loadedKey, let always = try? ClassKeys.derive(key, .always) {
            keys.append(always)
        }
        for keyFile in [source.loadedKey == nil ? source.keyFile : nil, claimedNewKeyFile(journal)].compactMap({ $0 }) {
            if let key = try? ExternalKeyFile.load(keyFile), let always = try? ClassKeys.derive(key, .always) {
                keys.append(always)
            }
        }
        return keys
    }
}
