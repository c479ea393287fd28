import VaultCrypto
import VaultSystem

/// A vault of the old format 1, read to be upgraded and for nothing else (docs/FORMAT.md, "Format 1"):
/// its marker says version 1, each group's keys are derived from the class keys with the group's
/// name, and its item files are item format 1 (an 8-byte header, no padding) bound to the vault id.
/// It writes nothing.
struct FormatOneVault {
    /// The format version in a format-1 `VAULT`.
    static let version: UInt8 = 1
    /// A format-1 item file's header: "VLTI" | 1 | algorithm | protection class | 0.
    static let itemHeaderByteCount = 8
    static let encryptionDomain = KeyDerivation.Domain("vault.grp.enc.v1")
    static let indexDomain = KeyDerivation.Domain("vault.grp.idx.v1")

    let location: FilePath
    /// The vault's `groups/`, owned by the caller.
    let groupsDirectory: FileDescriptor
    let classKeys: ClassKeys
    let vaultID: [UInt8]

    /// Whether `marker` (a `VAULT` file's bytes, unchecked) says format 1.
    static func isFormatOne(_ marker: [UInt8]) -> Bool {
        marker.count > 4 && marker[0..<4].elementsEqual(VaultMarker.magic) && marker[4] == version
    }

    /// Whether the marker of the vault at `location` says format 1 (read unchecked, for a message).
    static func isFormatOne(at location: FilePath) -> Bool {
        guard let directory = try? VaultDirectory.open(location) else { return false }
        defer { try? directory.close() }
        let marker = try? VaultStore.readMarker(in: directory, path: location / VaultMarker.fileName)
        return marker.map(isFormatOne) ?? false
    }

    /// What opening a format-1 vault as a store is: an error that names the vault and the upgrade.
    static func needsUpgrade(_ location: FilePath) -> StoreError {
        StoreError(
            .needsUpgrade,
            "the vault at \(location) is in the old format 1, which is upgraded at the first open that holds its "
                + "master key: run `vault upgrade` as its owner, with its key (its passphrase, or --key-file)",
            path: (location / VaultMarker.fileName).string)
    }

    /// The vault's groups: the directories of `groups/` whose names are group names.
    func groups() throws(StoreError) -> [GroupName] {
        do {
            return try groupsDirectory.entryNames().compactMap { try? GroupName($0) }.sorted()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: location / VaultStore.groupsDirectoryName)
        }
    }

    /// One item as the upgrade reads it.
    struct Item {
        let id: ItemID
        let protectionClass: ProtectionClass
        let version: ItemVersion
        let primaryKey: [UInt8]
        let plaintext: TransientBytes
    }

    /// Every item of `group`, each opened and checked under the group's keys, its record read by
    /// `records` and its version checked against its generation record; a file that does not open
    /// (damaged, or of a class whose key this process lacks), does not decode, or was replaced with an
    /// older copy of itself stops it, named.
    func items(in group: GroupName, records: VaultStore.ItemRecordReader) throws(StoreError) -> [Item] {
        let path = location / VaultStore.groupsDirectoryName / group.rawValue
        let directory = try VaultDirectory.openSubdirectory(group.rawValue, in: groupsDirectory, path: path)
        defer { try? directory.close() }
        let ids: [ItemID]
        do {
            ids = try directory.entryNames().compactMap { ItemID(fileName: $0) }.sorted()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: path)
        }
        let (index, keys) = try keys(group)
        var items: [Item] = []
        for id in ids {
            let filePath = path / id.fileName
            let location = ItemLocation(group: group, id: id)
            let contents = try SmallFile.read(
                id.fileName, in: directory, path: filePath, limit: ItemFile.maximumFileByteCount)
            let protectionClass = try Self.protectionClass(of: contents, path: filePath)
            guard let key = keys[protectionClass] else {
                throw StoreError(
                    .locked,
                    "\(filePath) is protected by class \(protectionClass), whose key this process lacks: the "
                        + "upgrade needs the vault's master key (its passphrase)",
                    path: filePath.string)
            }
            let plaintext: TransientBytes
            do {
                plaintext = try ItemFile.open(
                    contents, key: key, binding: vaultID, location: location, path: filePath,
                    headerByteCount: Self.itemHeaderByteCount, padded: false)
            } catch {
                throw Self.damaged(error)
            }
            guard let record = plaintext.withBytes({ records($0) }) else {
                throw Self.damaged(
                    StoreError(
                        .integrity, "\(filePath) decrypted but is not a valid item record", path: filePath.string))
            }
            let version = record.version
            if let recorded = try GenerationRecord.read(id, in: directory, itemPath: filePath).recorded,
                try GenerationRecord.provesRollback(
                    recorded, of: version, key: index, binding: vaultID, location: location)
            {
                throw StoreError(
                    .integrity,
                    "\(filePath) is generation \(version.generation) but the vault recorded generation "
                        + "\(recorded.generation): it was replaced with an older copy of itself (rollback); restore it "
                        + "from a backup, or move it out of the vault directory",
                    path: filePath.string)
            }
            items.append(
                Item(
                    id: id, protectionClass: protectionClass, version: version, primaryKey: record.primaryKey,
                    plaintext: plaintext))
        }
        return items
    }

    /// The class of a format-1 item file, after the checks of its header that need no key.
    private static func protectionClass(of contents: [UInt8], path: FilePath) throws(StoreError) -> ProtectionClass {
        guard contents.count >= itemHeaderByteCount + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount,
            contents[0..<4].elementsEqual(ItemFile.magic), contents[4] == version,
            contents[5] == ItemFile.algorithmXChaCha20Poly1305, contents[7] == 0,
            let protectionClass = ProtectionClass(rawValue: contents[6])
        else {
            throw damaged(
                StoreError(
                    .integrity, "\(path) is not a format-1 item file (bad header or truncated); it is damaged",
                    path: path.string))
        }
        return protectionClass
    }

    /// `error` about a file that does not open, with what to do: nobody can read that file.
    private static func damaged(_ error: StoreError) -> StoreError {
        guard error.code == .integrity else { return error }
        return StoreError(
            .integrity, "\(error.message); move it out of the vault directory (it cannot be read)", path: error.path,
            cause: error)
    }

    /// The keys of `group`: its index key (generation records), from the `always` class key, and the
    /// encryption key of each class this process has the key of; each a keyed BLAKE2b of the class key
    /// with the group's name.
    private func keys(_ group: GroupName) throws(StoreError) -> (
        index: SymmetricKey, encryption: [ProtectionClass: SymmetricKey]
    ) {
        let classes = ProtectionClass.allCases.filter { classKeys.key($0) != nil }
        let context = Array(group.rawValue.utf8)
        do {
            let derived = try KeyDerivation.subkeys(
                [KeyDerivation.Derivation(of: classKeys.always, domain: Self.indexDomain, context: context)]
                    + classes.map {
                        KeyDerivation.Derivation(
                            of: classKeys.key($0)!, domain: Self.encryptionDomain, context: context)
                    })
            return (derived[0], Dictionary(uniqueKeysWithValues: zip(classes, derived.dropFirst())))
        } catch {
            throw StoreError.crypto(error, "cannot derive the keys of group \(group)")
        }
    }
}
