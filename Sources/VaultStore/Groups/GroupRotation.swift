import VaultCrypto
import VaultSystem

/// Rotating a group's key in place: no directory is replaced (services bind-mount group
/// directories, and members hold them open) and item ids do not change (the index key stays).
///
/// 1. `group.key` is rewritten with the old key and a new one, the new one current: from here on
///    every write uses it, and readers hold both.
/// 2. Every item still under the old generation is sealed again under the new one (atomically, each
///    as an ordinary write).
/// 3. `group.key` is rewritten with the new key only.
///
/// A crash anywhere leaves every item readable: until step 3 the key file holds both keys, and after
/// it no item is under the old one. Running the rotation again finishes an interrupted one with the
/// key it made. A reader that meets a generation it does not know reads `group.key` again
/// (`encryptionKey`).
extension VaultStore {
    /// Rotates `group`'s key (the vault's owner only, under the group's write lock); returns the number
    /// of items sealed again. A removed member who kept the old key file can no longer read what is
    /// written after this (the secrets themselves should be changed too: they may have been copied).
    @discardableResult
    package func rotateGroup(_ group: GroupName) throws(StoreError) -> Int {
        let classKeys = try ownerClassKeys("rotate a group's key")
        if try loadGroupKeyFile(group)?.isFleet == true {
            throw StoreError(
                .unsupportedFormat,
                "group \(group) is a fleet group: its key is shared by every machine that joined it, and is rotated "
                    + "through its replica, on every machine (a vault opened with a fleet client); nothing was changed",
                path: groupPath(group).string)
        }
        return try withWriteLock(finishingMoves: true, groups: [group]) { (_) throws(StoreError) -> Int in
            try requireCurrentKeys()
            guard let directory = try groupDirectory(group, create: false) else {
                throw StoreError(
                    .groupNotFound, "there is no group \(group) in the vault at \(path)", path: groupPath(group).string)
            }
            guard let file = try loadGroupKeyFile(group) else {
                let keyPath = groupPath(group) / GroupKeyFile.fileName
                throw StoreError(
                    .missingKey,
                    "\(keyPath) is missing: group \(group) has no key to rotate; restore it from a backup; nothing "
                        + "was changed",
                    path: keyPath.string)
            }
            // 1. Both keys, the new one current (an interrupted rotation's new key is reused).
            let old = file.secrets.keys.first!
            let new: (generation: UInt32, key: SymmetricKey)
            if file.secrets.keys.count == 2 {
                new = file.secrets.keys[1]
            } else {
                do throws(CryptoError) {
                    new = (old.generation &+ 1, try SymmetricKey.random())
                } catch {
                    throw StoreError.crypto(error, "cannot make a new key for group \(group)")
                }
                try writeGroupKeyFile(
                    GroupKeyFile(
                        groupID: file.groupID, isShared: file.isShared,
                        secrets: GroupSecrets(
                            indexKey: file.secrets.indexKey, keys: [old, new], currentGeneration: new.generation)),
                    group: group, in: directory, classKeys: classKeys)
            }
            keyCache.withLock { _ = $0.groupKeys.removeValue(forKey: group) }
            let keys = try keys(for: group)
            // 2. Every item under the old generation, sealed again under the new one.
            var resealed = 0
            for (fileName, id) in try sealedFiles(in: group, directory: directory) {
                let item = ItemLocation(group: group, id: id)
                let path = groupPath(group) / fileName
                let contents: [UInt8]
                do throws(StoreError) {
                    contents = try SmallFile.read(
                        fileName, in: directory, path: path, limit: ItemFile.maximumFileByteCount)
                } catch  where error.errno == .noSuchFileOrDirectory {
                    continue
                }
                guard let sealed = try Self.resealed(contents, as: item, keys: keys, path: path) else { continue }
                try ItemWrite(
                    contents: sealed, name: fileName, record: nil, durable: true, reusingSpare: false,
                    permissions: keys.isShared ? .ownerAndGroupReadWrite : .ownerReadWrite
                )
                .run(in: directory, directoryPath: groupPath(group))
                if fileName == id.fileName { resealed += 1 }
            }
            // 3. The new key alone.
            try writeGroupKeyFile(
                GroupKeyFile(
                    groupID: file.groupID, isShared: file.isShared,
                    secrets: GroupSecrets(
                        indexKey: file.secrets.indexKey, keys: [new], currentGeneration: new.generation)),
                group: group, in: directory, classKeys: classKeys)
            keyCache.withLock { _ = $0.groupKeys.removeValue(forKey: group) }
            return resealed
        }
    }

    /// `contents`, a file of `item` (the item's or a kept version's) at `path`, sealed again under
    /// the group's current generation; nil when it is under it already.
    static func resealed(_ contents: [UInt8], as item: ItemLocation, keys: GroupKeys, path: FilePath)
        throws(StoreError) -> [UInt8]?
    {
        let header = try ItemFile.header(of: contents, path: path)
        guard header.generation != keys.currentGeneration else { return nil }
        guard let newKey = keys.encryption(header.protectionClass, generation: keys.currentGeneration) else {
            throw StoreError(
                .locked,
                "\(path) is protected by class \(header.protectionClass), whose key this process lacks: unlock "
                    + "the vault (`vault unlock`) and rotate again; group \(item.group) keeps both keys until then",
                path: path.string)
        }
        guard let oldKey = keys.encryption(header.protectionClass, generation: header.generation) else {
            throw StoreError(
                .integrity,
                "\(path) is sealed under generation \(header.generation) of group \(item.group)'s key, which this "
                    + "machine no longer holds", path: path.string)
        }
        let plaintext = try ItemFile.open(contents, key: oldKey, binding: keys.binding, location: item, path: path)
        return try plaintext.withBytes { (bytes) throws(StoreError) in
            try ItemFile.seal(
                bytes, key: newKey, protectionClass: header.protectionClass, generation: keys.currentGeneration,
                binding: keys.binding, location: item)
        }
    }

    /// Makes generation `generation`, with `key`, replicated group `group`'s current key (another
    /// machine rotated it): `group.key` then holds the generation that was current and the new one
    /// (what the replica still holds under the older one is sealed again by the rotation). The
    /// vault's owner only, under the group's lock.
    func adoptReplicatedGroupKey(_ group: GroupName, generation: UInt32, key: SymmetricKey) throws(StoreError) {
        let classKeys = try ownerClassKeys("take fleet group \(group)'s new key")
        let directory = try existingGroupDirectory(group)
        guard let file = try loadGroupKeyFile(group), file.isFleet else {
            throw StoreError(
                .integrity, "group \(group)'s group.key is missing or not a replicated group's",
                path: groupPath(group).string)
        }
        let current = file.secrets.keys.first { $0.generation == file.secrets.currentGeneration }!
        guard generation > current.generation else { return }
        try writeGroupKeyFile(
            GroupKeyFile(
                groupID: file.groupID, isShared: file.isShared,
                secrets: GroupSecrets(
                    indexKey: file.secrets.indexKey, keys: [current, (generation, key)], currentGeneration: generation),
                isFleet: true),
            group: group, in: directory, classKeys: classKeys)
        keyCache.withLock { _ = $0.groupKeys.removeValue(forKey: group) }
    }

    /// Every file of `group` sealed under its key: its items and their kept versions (`ItemHistory`),
    /// each with the item id it is bound to, items first.
    private func sealedFiles(in group: GroupName, directory: FileDescriptor) throws(StoreError)
        -> [(fileName: String, id: ItemID)]
    {
        let names: [String]
        do {
            names = try directory.entryNames().sorted()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
        }
        let items = names.compactMap { name in ItemID(fileName: name).map { (name, $0) } }
        let versions = names.compactMap { name in ItemHistory.parse(name).map { (name, $0.id) } }
        return items + versions
    }

    /// Replaces `group`'s key file (atomically and durably) with `file`.
    func writeGroupKeyFile(_ file: GroupKeyFile, group: GroupName, in directory: FileDescriptor, classKeys: ClassKeys)
        throws(StoreError)
    {
        let encoded = try file.encoded(
            group: group, vaultID: vaultID,
            sealKey: try GroupKeyFile.sealKey(always: classKeys.always, groupID: file.groupID))
        try AtomicFile.replace(
            GroupKeyFile.fileName, contents: .secret(encoded), in: directory, directoryPath: groupPath(group),
            permissions: file.isShared ? .ownerWriteGroupRead : .ownerReadWrite)
    }
}
