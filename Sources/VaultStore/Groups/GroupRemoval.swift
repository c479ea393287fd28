import VaultCrypto
import VaultSystem

extension VaultStore {
    /// Removes group `group` and its items (the owner only), under the vault's lock and the
    /// group's; refuses a group that still holds items unless `force`. Returns the number of items
    /// removed.
    @discardableResult
    package func removeGroup(_ group: GroupName, force: Bool) throws(StoreError) -> Int {
        _ = try ownerClassKeys("remove a group")
        guard try groupDirectory(group, create: false) != nil else {
            throw StoreError(
                .groupNotFound, "there is no group \(group) in the vault at \(path)", path: groupPath(group).string)
        }
        return try withWriteLock(finishingMoves: false) { (_) throws(StoreError) -> Int in
            // A fleet group's cache as it is: removing this machine's copy needs no etcd.
            let count = try localItemIDs(in: group, sorted: false).count
            guard count == 0 || force else {
                let items = "\(count) item\(count == 1 ? "" : "s")"
                // A fleet group's items removed one by one would go from every machine.
                let advice =
                    isFleetGroup(group)
                    ? "fleet group \(group) holds \(items) on this machine; --force removes this machine's copy (etcd "
                        + "and the other machines keep the group; "
                    : "group \(group) still holds \(items); remove them first, or give --force to remove the group "
                        + "with them ("
                throw StoreError(.invalidName, advice + "nothing was changed)", path: groupPath(group).string)
            }
            let directory: FileDescriptor
            do throws(StoreError) {
                directory = try existingGroupDirectory(group)
            } catch
                where force && (error.code == .integrity || error.code == .missingKey)
                && error.path == (groupPath(group) / GroupKeyFile.fileName).string
            {
                // A key file that is damaged or gone takes the items with it: --force removes them all.
                // (One that another user put there is refused as unsafe, naming it, above.)
                guard let found = try groupDirectory(group, create: false) else { return 0 }
                directory = found
            }
            let groupPath = groupPath(group)
            let names: [String]
            do throws(Errno) {
                names = try directory.entryNames()
            } catch {
                throw StoreError.system(error, .readDirectory, "list", path: groupPath)
            }
            // The key and the lock last: until then the group is still one.
            let last = [GroupKeyFile.fileName, Self.lockFileName]
            for name in names.filter({ !last.contains($0) }) + last.filter(names.contains) {
                do throws(Errno) {
                    try directory.unlinkAt(name)
                } catch {
                    if error == .isDirectory || error == .notPermitted {
                        try VaultDirectory.removeTree(name, in: directory, path: groupPath)
                        continue
                    }
                    if error != .noSuchFileOrDirectory {
                        throw StoreError.system(error, .unlink, "remove", path: groupPath / name)
                    }
                }
            }
            retireDirectory(of: group)
            if let lock = groupCommit.withLock({ $0.groupLocks.removeValue(forKey: group) }) {
                directories.withLock { $0.retiredDescriptors.append(lock.file) }
            }
            _ = keyCache.withLock { $0.groupKeys.removeValue(forKey: group) }
            // A writer preparing a set (group commit) makes its slot's files without the lock, so one may
            // appear after the listing: list and unlink again. Once the directory is gone, nothing can.
            var attempts = 0
            while true {
                do throws(Errno) {
                    try groupsDirectory.removeDirectoryAt(group.rawValue)
                    break
                } catch {
                    attempts += 1
                    guard error == .directoryNotEmpty, attempts < 8 else {
                        throw StoreError.system(error, .unlink, "remove", path: groupPath)
                    }
                    for name in (try? directory.entryNames()) ?? [] { try? directory.unlinkAt(name) }
                }
            }
            try AtomicFile.syncDirectory(groupsDirectory, path: groupsPath)
            replicas.withLock {
                _ = $0.replicas.removeValue(forKey: group)
            }
            // The group is gone whatever happens to the index, which only points: a stale entry names a
            // directory that is no longer there, and the next update drops it.
            try? updateSharedGroupIndexes()
            return count
        }
    }
}
