import VaultCrypto
import VaultSystem

/// The half-built new vault that a rekey writes items into.
public struct RekeyTarget {
    let store: VaultStore
    let classKeys: ClassKeys
    /// What the new items are sealed under: the new class keys (format 1), or new item class keys
    /// (format 2, `ItemClassKeyFile`).
    let itemClassKeys: ClassKeys
    let groupsDirectory: FileDescriptor
    /// The vault format the new items are written in (2 for an upgrade).
    let format: UInt8
    private let state: RekeyState

    final class RekeyState {
        var groupDirectories: [GroupName: FileDescriptor] = [:]
        var groupKeys: [GroupName: GroupKeys] = [:]
    }

    init(
        store: VaultStore, classKeys: ClassKeys, itemClassKeys: ClassKeys, groupsDirectory: FileDescriptor,
        format: UInt8
    ) {
        self.store = store
        self.classKeys = classKeys
        self.itemClassKeys = itemClassKeys
        self.groupsDirectory = groupsDirectory
        self.format = format
        self.state = RekeyState()
    }

    func keys(_ group: GroupName) throws(StoreError) -> GroupKeys {
        if let keys = state.groupKeys[group] { return keys }
        let keys: GroupKeys
        if format == 1 {
            keys = try GroupKeys(classKeys: classKeys, group: group, vaultID: store.vaultID)
        } else {
            keys = try GroupKeys(file: try makeGroupKeyFile(group), classKeys: itemClassKeys, group: group)
        }
        state.groupKeys[group] = keys
        return keys
    }

    /// Format 2 (an upgrade): a private group's key file and lock in the new group directory.
    private func makeGroupKeyFile(_ group: GroupName) throws(StoreError) -> GroupKeyFile {
        let directory = try groupDirectory(group)
        let path = store.location / Rekey.newGroups / group.rawValue
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
            group: group, vaultID: store.vaultID,
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
    public func itemID(group: GroupName, primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        try keys(group).itemID(primaryKey)
    }

    /// Writes an item of the new vault (not durable until the rekey syncs the file system).
    public func write(
        _ plaintext: [UInt8], to item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion?
    ) throws(StoreError) {
        let directory = try groupDirectory(item.group)
        let path = store.location / Rekey.newGroups / item.group.rawValue
        let key = try keys(item.group)
        guard let encryption = key.encryption(protectionClass, generation: key.currentGeneration) else {
            throw StoreError(.locked, "the new \(protectionClass) class key is missing", path: path.string)
        }
        let contents = try ItemFile.seal(
            plaintext, version: ItemFile.version(forVault: format), key: encryption, protectionClass: protectionClass,
            generation: key.currentGeneration, binding: key.binding, location: item)
        // As in `WriteTransaction.write`: generation 1 has no record (the new directory holds none to remove).
        var record: (name: String, text: String?)?
        if let version, version.generation > 1 {
            let tag = try GenerationRecord.tag(key: key.index, binding: key.binding, location: item, version: version)
            record = (GenerationRecord.name(item.id), GenerationRecord.text(generation: version.generation, tag: tag))
        }
        try ItemWrite(contents: contents, name: item.id.fileName, record: record, durable: false, reusingSpare: false)
            .run(in: directory, directoryPath: path)
    }

    private func groupDirectory(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        if let fd = state.groupDirectories[group] { return fd }
        let path = store.location / Rekey.newGroups / group.rawValue
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
