import VaultCrypto
import VaultSystem

/// The half-built new groups directory (`groups.new`) that the upgrade writes a format-1 vault's items
/// into: each group private, with a new `group.key` and `.lock`, its items sealed under the item class
/// keys of the new `classes.key`.
struct UpgradeTarget {
    let location: FilePath
    let vaultID: [UInt8]
    let classKeys: ClassKeys
    /// What the new items are sealed under: the new item class keys (`ItemClassKeyFile`).
    let itemClassKeys: ClassKeys
    let groupsDirectory: FileDescriptor
    private let state = UpgradeState()

    final class UpgradeState {
        var groupDirectories: [GroupName: FileDescriptor] = [:]
        var groupKeys: [GroupName: GroupKeys] = [:]
    }

    init(
        location: FilePath, vaultID: [UInt8], classKeys: ClassKeys, itemClassKeys: ClassKeys,
        groupsDirectory: FileDescriptor
    ) {
        self.location = location
        self.vaultID = vaultID
        self.classKeys = classKeys
        self.itemClassKeys = itemClassKeys
        self.groupsDirectory = groupsDirectory
    }

    func keys(_ group: GroupName) throws(StoreError) -> GroupKeys {
        if let keys = state.groupKeys[group] { return keys }
        let keys = try GroupKeys(file: try makeGroupKeyFile(group), classKeys: itemClassKeys, group: group)
        state.groupKeys[group] = keys
        return keys
    }

    /// A private group's key file and lock in the new group directory.
    private func makeGroupKeyFile(_ group: GroupName) throws(StoreError) -> GroupKeyFile {
        let directory = try groupDirectory(group)
        let path = location / Rekey.newGroups / group.rawValue
        let random = try GroupSecrets.random()
        let groupID: [UInt8]
        do {
            groupID = try SecureRandom.bytes(count: GroupKeyFile.groupIDByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a group id")
        }
        let file = GroupKeyFile(
            groupID: groupID, isShared: false,
            secrets: GroupSecrets(
                indexKey: try VaultStore.privateIndexKey(always: itemClassKeys.always, group: group), keys: random.keys,
                currentGeneration: random.currentGeneration))
        let encoded = try file.encoded(
            group: group, vaultID: vaultID,
            sealKey: try GroupKeyFile.sealKey(always: classKeys.always, groupID: groupID))
        try AtomicFile.replace(
            GroupKeyFile.fileName, contents: .secret(encoded), in: directory, directoryPath: path)
        do {
            let lock = try directory.openAt(
                VaultStore.lockFileName, [.readWrite, .create, .nonBlocking], permissions: .ownerReadWrite)
            WriterMark.idle.write(to: lock)
            try? lock.close()
        } catch {
            throw StoreError.system(error, .open, "create the lock file", path: path / VaultStore.lockFileName)
        }
        return file
    }

    /// The id the item with `primaryKey` has under the new keys.
    func itemID(group: GroupName, primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        try keys(group).itemID(primaryKey)
    }

    /// Writes an item of the new vault (not durable until the upgrade syncs the file system).
    func write(
        _ plaintext: [UInt8], to item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion
    ) throws(StoreError) {
        let directory = try groupDirectory(item.group)
        let path = location / Rekey.newGroups / item.group.rawValue
        let key = try keys(item.group)
        guard let encryption = key.encryption(protectionClass, generation: key.currentGeneration) else {
            throw StoreError(.locked, "the new \(protectionClass) class key is missing", path: path.string)
        }
        let contents = try ItemFile.seal(
            plaintext, key: encryption, protectionClass: protectionClass, generation: key.currentGeneration,
            binding: key.binding, location: item)
        // As in `WriteTransaction.write`: generation 1 has no record (the new directory holds none to remove).
        var record: (name: String, text: String?)?
        if version.generation > 1 {
            let tag = try GenerationRecord.tag(key: key.index, binding: key.binding, location: item, version: version)
            record = (GenerationRecord.name(item.id), GenerationRecord.text(generation: version.generation, tag: tag))
        }
        try ItemWrite(contents: contents, name: item.id.fileName, record: record, durable: false, reusingSpare: false)
            .run(in: directory, directoryPath: path)
    }

    private func groupDirectory(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        if let fd = state.groupDirectories[group] { return fd }
        let path = location / Rekey.newGroups / group.rawValue
        do {
            try groupsDirectory.makeDirectoryAt(group.rawValue, permissions: .ownerAll)
        } catch {
            if error != .fileExists { throw StoreError.system(error, .mkdir, "create", path: path) }
        }
        let fd = try VaultDirectory.openSubdirectory(group.rawValue, in: groupsDirectory, path: path)
        state.groupDirectories[group] = fd
        return fd
    }

    func close() {
        for fd in state.groupDirectories.values { try? fd.close() }
        try? groupsDirectory.close()
    }
}
