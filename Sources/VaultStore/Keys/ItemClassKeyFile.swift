import VaultCrypto
import VaultSystem

/// `classes.key`: the vault's item class keys, random, each sealed under the class key of
/// the same protection class that the master key gives. A private group's items are sealed under
/// keys made from these and the group's key, never from the master key itself: a rekey seals this
/// file and every `group.key` again under the new master key and leaves every item file as it is.
/// A process that lacks a class key (a locked passphrase vault) cannot open that class's entry, so
/// private groups still lock.
///
///     header = "VLTK" | version u8 (1) | reserved u8×3 (0) | vault id (16)
///     then, for Always, AfterFirstUnlock, WhenUnlocked in turn:
///         nonce (24) | XChaCha20-Poly1305(subkey(class key, "vault.icls.v2", vault id), item class key,
///                                         ad = header | class u8)
///
/// A vault made before this file existed has none; there the class keys stand in for the item class
/// keys (they were used that way), and its first rekey writes the file (the same keys, sealed).
struct ItemClassKeyFile {
    static let fileName = "classes.key"
    static let magic: [UInt8] = Array("VLTK".utf8)
    static let version: UInt8 = 1
    static let headerByteCount = 24
    static let entryByteCount =
        XChaCha20Poly1305.nonceByteCount + SymmetricKey.byteCount + XChaCha20Poly1305.tagByteCount
    static let byteCount = headerByteCount + ProtectionClass.allCases.count * entryByteCount
    static let sealDomain = KeyDerivation.Domain("vault.icls.v2")

    /// New random item class keys (all three).
    static func random() throws(StoreError) -> ClassKeys {
        do {
            return ClassKeys(
                always: try SymmetricKey.random(), afterFirstUnlock: try SymmetricKey.random(),
                whenUnlocked: try SymmetricKey.random())
        } catch {
            throw StoreError.crypto(error, "cannot make the item class keys")
        }
    }

    static func header(vaultID: [UInt8]) -> [UInt8] {
        magic + [version, 0, 0, 0] + vaultID
    }

    /// The file's bytes: each of `itemKeys` (all three must be at hand) sealed under the class key of
    /// `classKeys` of the same class (all three too).
    static func encoded(_ itemKeys: ClassKeys, under classKeys: ClassKeys, vaultID: [UInt8]) throws(StoreError)
        -> [UInt8]
    {
        let header = header(vaultID: vaultID)
        var bytes = header
        for protectionClass in ProtectionClass.allCases {
            guard let itemKey = itemKeys.key(protectionClass), let classKey = classKeys.key(protectionClass) else {
                throw StoreError(.locked, "the \(protectionClass) class key is not at hand to seal \(fileName) with")
            }
            do {
                let nonce = try XChaCha20Poly1305.randomNonce()
                bytes += nonce
                bytes += try XChaCha20Poly1305.seal(
                    itemKey.bytes, key: try KeyDerivation.subkey(sealing(classKey, vaultID: vaultID)), nonce: nonce,
                    associatedData: header + [protectionClass.rawValue])
            } catch {
                throw StoreError.crypto(error, "cannot seal the \(protectionClass) item class key")
            }
        }
        return bytes
    }

    /// Writes the file `name` of the vault directory (atomically, durably, 0600).
    static func write(
        _ itemKeys: ClassKeys, under classKeys: ClassKeys, vaultID: [UInt8], in directory: FileDescriptor,
        vaultPath: FilePath, name: String = fileName
    ) throws(StoreError) {
        let bytes = try encoded(itemKeys, under: classKeys, vaultID: vaultID)
        try AtomicFile.replace(name, contents: .plain(bytes), in: directory, directoryPath: vaultPath)
    }

    /// The item class keys of the file `name` that `classKeys` open (nil for a class whose key is not
    /// at hand), or nil when there is no such file.
    static func load(
        in directory: FileDescriptor, vaultPath: FilePath, vaultID: [UInt8], classKeys: ClassKeys,
        name: String = fileName
    ) throws(StoreError) -> ClassKeys? {
        let path = vaultPath / name
        guard
            let bytes = try KeyFile.readSealedIfPresent(name, in: directory, path: path, sizes: [Int64(byteCount)])
        else { return nil }
        let header = header(vaultID: vaultID)
        guard Array(bytes[0..<headerByteCount]) == header else {
            throw StoreError(
                .integrity, "\(path) is not this vault's item class key file, or it is damaged", path: path.string)
        }
        // Every entry this process has the class key of, opened together (one secure allocation).
        var classes: [ProtectionClass] = []
        var sealed: [XChaCha20Poly1305.SealedSecret] = []
        classes.reserveCapacity(ProtectionClass.allCases.count)
        sealed.reserveCapacity(ProtectionClass.allCases.count)
        for protectionClass in ProtectionClass.allCases {
            guard let classKey = classKeys.key(protectionClass) else { continue }
            let start = headerByteCount + Int(protectionClass.rawValue) * entryByteCount
            let nonceEnd = start + XChaCha20Poly1305.nonceByteCount
            classes.append(protectionClass)
            sealed.append(
                XChaCha20Poly1305.SealedSecret(
                    ciphertext: bytes[nonceEnd..<(start + entryByteCount)], nonce: bytes[start..<nonceEnd],
                    associatedData: header + [protectionClass.rawValue],
                    sealedUnder: sealing(classKey, vaultID: vaultID)))
        }
        let opened: [SecureBytes]
        do {
            opened = try XChaCha20Poly1305.openSecrets(sealed)
        } catch {
            if let index = error.index, error.error.code == .authenticationFailed {
                throw StoreError(
                    .integrity,
                    "\(path) failed authentication for class \(classes[index]): it is damaged, or sealed under "
                        + "another master key", path: path.string, cause: error.error)
            }
            throw StoreError.crypto(error.error, "cannot open \(path)")
        }
        func key(_ protectionClass: ProtectionClass) throws(StoreError) -> SymmetricKey? {
            guard let index = classes.firstIndex(of: protectionClass) else { return nil }
            do {
                return try SymmetricKey(opened[index])
            } catch {
                throw StoreError.crypto(error, "cannot open \(path)")
            }
        }
        guard let always = try key(.always) else {
            throw StoreError(.integrity, "\(path) has no Always entry", path: path.string)
        }
        return ClassKeys(
            always: always, afterFirstUnlock: try key(.afterFirstUnlock), whenUnlocked: try key(.whenUnlocked))
    }

    /// How the key an entry is sealed under is derived: a subkey of its class key.
    private static func sealing(_ classKey: SymmetricKey, vaultID: [UInt8]) -> KeyDerivation.Derivation {
        KeyDerivation.Derivation(of: classKey, domain: sealDomain, context: vaultID)
    }
}
