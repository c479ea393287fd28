import VaultSystem

/// The store's cache of open group directories: each group directory is opened once (checked as
/// every directory of the vault is) and used through `*at` calls on its descriptor afterwards.
extension VaultStore {
    /// The open directory of `group`, or nil when the group has no directory yet (and `create` is
    /// false).
    func groupDirectory(_ group: GroupName, create: Bool) throws(StoreError) -> FileDescriptor? {
        if let fd = directories.withLock({ $0.groupDirectories[group] }) { return fd }
        let groupPath = groupPath(group)
        if create {
            var created = true
            do {
                try groupsDirectory.makeDirectoryAt(group.rawValue, permissions: .ownerAll)
            } catch {
                guard error == .fileExists else {
                    throw StoreError.system(error, .mkdir, "create the group directory", path: groupPath)
                }
                created = false
            }
            if created { try AtomicFile.syncDirectory(groupsDirectory, path: groupsPath) }
        }
        let fd: FileDescriptor
        do {
            fd = try VaultDirectory.openGroupDirectory(
                group.rawValue, in: groupsDirectory, path: groupPath, owner: ownerID)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        return directories.withLock { state in
            if let existing = state.groupDirectories[group] {
                try? fd.close()
                return existing
            }
            state.groupDirectories[group] = fd
            return fd
        }
    }

    /// The directory of `group`, created when missing. The directory can vanish between mkdir and
    /// open (another process renamed or removed it; the symlink-swap harness does that): an error, not
    /// a crash.
    func existingGroupDirectory(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        if keyCache.withLock({ $0.groupKeys[group] == nil }) {
            // A group is its directory with its key; the owner's first write to a group that
            // has none makes a private one. Any other failure to read the key (a non-member refused by
            // the kernel, a damaged or foreign key file) is the write's answer.
            let absent: Bool
            do {
                absent = try keys(for: group).isAbsent
            } catch  where error.code == .groupNotFound {
                absent = true
            }
            if absent {
                guard let classKeys else {
                    throw StoreError(
                        .groupNotFound,
                        "there is no group \(group) in the vault at \(path), and only the vault's owner can make one",
                        path: groupPath(group).string)
                }
                try withGroupCreationLock { () throws(StoreError) in
                    // Made by another process since this one looked (it may have written items already):
                    // theirs stands.
                    keyCache.withLock { _ = $0.groupKeys.removeValue(forKey: group) }
                    guard try keys(for: group).isAbsent else { return }
                    // A directory that holds items but no key file lost its key: `keys(for:)` above and
                    // `makeGroup` below refuse it, never writing a new key over the items.
                    // A shared directory that lost its key (a member removed it before any item was written)
                    // stays shared: its members keep their group.
                    let status = try? groupsDirectory.statusAt(group.rawValue)
                    let unixGroup =
                        status.map { $0.permissions.rawValue == FilePermissions.sharedDirectory.rawValue } == true
                        ? status?.groupID : nil
                    try makeGroup(group, unixGroup: unixGroup, classKeys: classKeys)
                }
            }
        }
        guard let directory = try groupDirectory(group, create: true) else {
            throw StoreError(
                .io, "the group directory \(groupPath(group)) disappeared while it was being opened; try again",
                path: groupPath(group).string)
        }
        return directory
    }

    /// The groups that have a directory in the vault, sorted.
    package func groups() throws(StoreError) -> [GroupName] {
        let names: [String]
        do {
            names = try groupsDirectory.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupsPath)
        }
        return names.compactMap { try? GroupName($0) }.sorted()
    }

    /// Throws `missingKey` when `group`, whose key file is missing, holds items: its key is lost, and
    /// `consequence` says what the caller will not do about it.
    func refuseItemsWithoutKey(_ group: GroupName, _ consequence: String) throws(StoreError) {
        guard try holdsItemFiles(group) else { return }
        throw missingKey(group, consequence)
    }

    /// The refusal of `group`, which holds items but whose key file is missing.
    func missingKey(_ group: GroupName, _ consequence: String) -> StoreError {
        let keyPath = groupPath(group) / GroupKeyFile.fileName
        return StoreError(
            .missingKey, "\(keyPath) is missing but group \(group) holds items: " + consequence, path: keyPath.string)
    }

    /// Whether `group`'s directory exists and holds item files (one listing; no replica is asked). A
    /// listing that fails is thrown, never taken for "no items": a new key would go over them.
    func holdsItemFiles(_ group: GroupName) throws(StoreError) -> Bool {
        guard let directory = try groupDirectory(group, create: false) else { return false }
        do {
            return try directory.entryNames().contains { ItemID(fileName: $0) != nil }
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
        }
    }

    /// The ids of the items in `group`, sorted unless `sorted` is false; temp files and foreign names
    /// are skipped.
    package func itemIDs(in group: GroupName, sorted: Bool = true) throws(StoreError) -> [ItemID] {
        _ = try refreshReplicaIfStale(group)
        return try localItemIDs(in: group, sorted: sorted)
    }

    /// The ids of the item files in `group`'s directory as it is, a fleet group's cache not brought up
    /// to date first (what a removal of this machine's copy removes).
    func localItemIDs(in group: GroupName, sorted: Bool = true) throws(StoreError) -> [ItemID] {
        guard let directory = try groupDirectory(group, create: false) else { return [] }
        do {
            let ids = try directory.entryNames().compactMap { ItemID(fileName: $0) }
            return sorted ? ids.sorted() : ids
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
        }
    }
}

/// The group directories a store has open (`groupDirectory`), and those of removed groups.
struct OpenGroupDirectories {
    /// The open group directories.
    var groupDirectories: [GroupName: FileDescriptor] = [:]
    /// Descriptors of removed groups, closed only with the store: a prepared write of another thread
    /// (`PreparedItemWrite`) may still hold one, and a closed number can be reused by any open.
    var retiredDescriptors: [FileDescriptor] = []
}

extension VaultStore {
    /// Stops using `group`'s open directory (removed, or never finished): retired, not closed.
    func retireDirectory(of group: GroupName) {
        directories.withLock {
            if let fd = $0.groupDirectories.removeValue(forKey: group) { $0.retiredDescriptors.append(fd) }
        }
    }
}
