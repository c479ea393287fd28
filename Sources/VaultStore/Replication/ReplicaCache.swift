import VaultCrypto
import VaultSystem

/// What a replica may do to its group's directory, the replica's cache: read, store and remove item
/// files (a replica's bytes are checked like any item file before they are cached), keep small files
/// of its own there, and take the group's lock.
package struct ReplicaCache {
    let store: VaultStore
    /// The group whose directory this is.
    package let group: GroupName
    /// How many item files the replica stored or removed through this value.
    final class Changes {
        var count = 0
    }
    let changes = Changes()

    /// How many item files the replica stored or removed through this value so far.
    package var changeCount: Int { changes.count }

    init(store: VaultStore, group: GroupName) {
        self.store = store
        self.group = group
    }

    /// The uid of the vault's owner, who alone writes the group's settings.
    package var vaultOwnerID: UInt32 { store.ownerID }

    /// The group directory's path, for messages.
    package var groupPath: String { store.path(of: group) }

    /// The vault directory's path, for messages.
    package var vaultPath: String { store.path }

    /// The ids of the items cached now (the directory as it is: the replica is what brings it up to date).
    package func cachedIDs() throws(StoreError) -> [ItemID] {
        try store.localItemIDs(in: group, sorted: false)
    }

    /// The cached file of item `id`, or nil.
    package func contents(of id: ItemID) throws(StoreError) -> [UInt8]? {
        try store.cachedItemFile(ItemLocation(group: group, id: id))
    }

    /// Caches `contents` as item `id`'s file, after checking that it opens under the group's keys as
    /// that item (a value moved from another key, group or vault fails here: `integrity`).
    package func store(_ contents: [UInt8], as id: ItemID) throws(StoreError) {
        try store.cacheItemFile(contents, as: ItemLocation(group: group, id: id))
        changes.count += 1
    }

    /// Removes item `id` from the cache.
    package func remove(_ id: ItemID) throws(StoreError) {
        try store.uncacheItemFile(ItemLocation(group: group, id: id))
        changes.count += 1
    }

    /// Whether `contents` opens under the group's keys as item `id` (nothing is stored): false when it
    /// fails its integrity check; any other failure (a locked class, I/O) is thrown, never taken as
    /// "does not open".
    package func opens(_ contents: [UInt8], as id: ItemID) throws(StoreError) -> Bool {
        do {
            try store.checkItemFile(contents, as: ItemLocation(group: group, id: id))
            return true
        } catch  where error.code == .integrity {
            return false
        }
    }

    /// The group's key (its id and index key).
    package func groupKey() throws(StoreError) -> ReplicatedGroupKey {
        guard let file = try store.loadGroupKeyFile(group), file.isFleet else {
            throw StoreError(
                .integrity, "group \(group)'s group.key is missing or not a replicated group's",
                path: store.path(of: group))
        }
        return ReplicatedGroupKey(file: file)
    }

    /// Makes generation `generation`, with `key`, the group's current key (the replica's rotation
    /// handed it to this machine): the vault's owner only.
    package func adoptGroupKey(generation: UInt32, key: SymmetricKey) throws(StoreError) {
        try store.adoptReplicatedGroupKey(group, generation: generation, key: key)
    }

    /// `contents`, item `id`'s file (or one of its kept versions), sealed again under the group's
    /// current key; nil when it is under it already.
    package func resealed(_ contents: [UInt8], as id: ItemID) throws(StoreError) -> [UInt8]? {
        let item = ItemLocation(group: group, id: id)
        return try VaultStore.resealed(contents, as: item, keys: try store.keys(for: group), path: store.itemPath(item))
    }

    /// Whether the group's directory has been made and still exists.
    package var exists: Bool { (try? store.groupDirectory(group, create: false)) != nil }

    /// Runs `body` under the group's write lock, as a transaction of this store whose first touch of
    /// the group it is (reads inside it do not ask the replica again).
    package func withGroupLock<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try store.withWriteLock(groups: [group]) { (_) throws(StoreError) -> R in
            store.transactionState.withLock { _ = $0.refreshedInTransaction.insert(group) }
            return try body()
        }
    }

    // MARK: The replica's own files in the group directory

    /// The bytes of the replica's file `name`, nil when there is none.
    package func readFile(_ name: String, limit: Int) throws(StoreError) -> [UInt8]? {
        guard let directory = try store.groupDirectory(group, create: false) else { return nil }
        return try SmallFile.readIfPresent(name, in: directory, path: store.groupPath(group) / name, limit: limit)
    }

    /// When the replica's file `name` was last written (nanoseconds since the epoch), or nil.
    package func modificationTime(of name: String) -> Int64? {
        guard let directory = try? store.groupDirectory(group, create: false),
            let status = try? directory.statusAt(name)
        else { return nil }
        return status.modificationNanoseconds
    }

    /// When an entry of the group directory was last added, removed or renamed (its modification time,
    /// nanoseconds since the epoch), or nil.
    package func directoryModificationTime() -> Int64? {
        guard let directory = try? store.groupDirectory(group, create: false), let status = try? directory.status()
        else { return nil }
        return status.modificationNanoseconds
    }

    /// The bytes of the replica's file `name` written by the vault's owner alone (`what` names it in a
    /// refusal), nil when there is none.
    /// It counts only as a regular file of the owner with one link that no one else may write: in a
    /// shared group's directory a member may put files, and a settings file of theirs could send every
    /// user of the group, the owner included, to a replica of theirs.
    package func readOwnersFile(_ name: String, limit: Int, what: String) throws(StoreError) -> [UInt8]? {
        guard let directory = try store.groupDirectory(group, create: false) else { return nil }
        let path = store.groupPath(group) / name
        let fd: FileDescriptor
        let status: FileStatus
        do {
            (fd, status) = try SmallFile.openRegular(name, in: directory, path: path)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        defer { try? fd.close() }
        let owner = store.ownerID
        let refusal: String? =
            if status.ownerID != owner {
                "belongs to uid \(status.ownerID), not to the vault's owner (uid \(owner))"
            } else if status.linkCount != 1 {
                "has \(status.linkCount) links"
            } else if status.permissions.rawValue & 0o022 != 0 {
                "can be written by others (mode \(status.permissions); the owner's fix: `chmod go-w \(path)`)"
            } else {
                nil
            }
        if let refusal {
            throw StoreError(
                .insecureFile,
                "\(path) \(refusal): it is not \(what) (a member may have put it there), and nothing was sent to "
                    + "the endpoints it names",
                path: path.string)
        }
        return try SmallFile.read(fd, status: status, path: path, limit: limit)
    }

    /// Durably replaces the replica's file `name` with `bytes`, readable by the vault's owner alone
    /// (a secret of this machine's, which members of a shared group do not get).
    package func writeOwnersFile(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        try AtomicFile.replace(
            name, contents: .plain(bytes), in: try store.existingGroupDirectory(group),
            directoryPath: store.groupPath(group), permissions: .ownerReadWrite)
    }

    /// Durably writes the replica's file `name`, of a length that does not change: in place over the
    /// last one (one write of under a sector, then `fdatasync`), or, for a first write or a file that is
    /// not a regular file of that length with one link (of this user; in a shared group of any member,
    /// 0660 and of the directory's Unix group, since every member's writes change it: what a member
    /// could write anyway), replaced.
    package func writeFixedLengthFile(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        let directory = try store.existingGroupDirectory(group)
        let path = store.groupPath(group) / name
        let permissions = store.memberFilePermissions(group)
        if let file = try? directory.openAt(name, [.writeOnly, .nonBlocking]) {
            defer { try? file.close() }
            if let status = try? file.status(), status.kind == .regular, status.linkCount == 1,
                status.size == Int64(bytes.count),
                status.ownerID == ProcessIdentity.effectiveUserID
                    || (permissions == .ownerAndGroupReadWrite && status.permissions == permissions
                        && status.groupID == (try? directory.status())?.groupID)
            {
                do throws(Errno) {
                    try file.writeAll(bytes, at: 0)
                    try file.syncData()
                    return
                } catch {
                    throw StoreError.system(error, .write, "write", path: path)
                }
            }
        }
        try AtomicFile.replace(
            name, contents: .plain(bytes), in: directory, directoryPath: store.groupPath(group),
            permissions: permissions)
    }
}
