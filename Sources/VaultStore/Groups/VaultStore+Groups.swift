import VaultCrypto
import VaultSystem

/// Access groups: each has its own `group.key` and `.lock` in its directory. A private
/// group is the owner's alone (0700, its key sealed under the owner's `always` key); a shared group's
/// directory is `<owner>:<Unix group>` 2770 and its key file 0640, so that the kernel lets the
/// members of one Unix group, and no one else, use it.
extension VaultStore {
    static let privateIndexDomain = KeyDerivation.Domain("vault.grp.idx.v2")

    /// The owner's index key of private group `group`: derived, so that item ids can be computed (and
    /// agree between processes) before the group exists.
    func privateIndexKey(_ group: GroupName) throws(StoreError) -> SymmetricKey {
        _ = try ownerClassKeys("use group \(group)")
        guard let itemClassKeys else { throw StoreError(.locked, "the item class keys of \(path) are missing") }
        return try Self.privateIndexKey(always: itemClassKeys.always, group: group)
    }

    /// `privateIndexKey(_:)` from the `always` item class key `always` (`ItemClassKeyFile`), which a
    /// rekey leaves as it is.
    static func privateIndexKey(always: SymmetricKey, group: GroupName) throws(StoreError) -> SymmetricKey {
        do {
            return try KeyDerivation.subkey(
                of: always, domain: privateIndexDomain, context: Array(group.rawValue.utf8))
        } catch {
            throw StoreError.crypto(error, "cannot derive the index key of group \(group)")
        }
    }

    /// The keys of `group` from its `group.key`. A group that does not exist yet has, for
    /// its owner, the keys of a private group without encryption keys (ids only; not cached, so that
    /// the group is read once it is made); for a member it is `groupNotFound`.
    func loadGroupKeys(_ group: GroupName) throws(StoreError) -> GroupKeys {
        guard let file = try loadGroupKeyFile(group) else {
            guard classKeys != nil else {
                throw StoreError(
                    .groupNotFound, "there is no group \(group) in the vault at \(path)", path: groupPath(group).string)
            }
            // A directory with items but no key lost its key: reading its items under a new private key
            // would call every one of them damaged (and `check --remove-damaged` would remove them). A
            // group is made with its key before any item, so items seen after the key was not are those of
            // a group another writer made meanwhile when the key is there on a second look.
            if try holdsItemFiles(group) {
                if let file = try loadGroupKeyFile(group) {
                    return try GroupKeys(file: file, classKeys: itemClassKeys, group: group)
                }
                // Listed once already: the refusal itself, not `refuseItemsWithoutKey`'s second listing.
                throw missingKey(
                    group,
                    "restore it from a backup (its keys are nowhere else); the items are not damaged: do not remove "
                        + "them")
            }
            return GroupKeys(absentPrivateGroupWithIndex: try privateIndexKey(group))
        }
        return try GroupKeys(file: file, classKeys: itemClassKeys, group: group)
    }

    /// `group`'s key file, opened as the owner or as a member; nil when the group has none.
    func loadGroupKeyFile(_ group: GroupName) throws(StoreError) -> GroupKeyFile? {
        guard let directory = try groupDirectory(group, create: false),
            var bytes = try readGroupKeyFile(group, in: directory)
        else { return nil }
        // A shared group's file holds its keys in the clear: not left in ordinary memory.
        defer { bytes.wipe() }
        let path = groupPath(group) / GroupKeyFile.fileName
        // A group's keys are held from here on, as a master key is after `KeyFile`'s read: no core dump
        // or same-user ptrace of this process (a member never reads a key file otherwise).
        try? ProcessIdentity.disableDumps()
        if let classKeys {
            do throws(StoreError) {
                return try GroupKeyFile.decodeAsOwner(
                    bytes, group: group, vaultID: vaultID, always: classKeys.always, path: path)
            } catch  where error.code == .integrity {
                // Keys of a vault that was rekeyed since this store opened it: say so, not "damaged".
                try requireCurrentKeys()
                // A shared group's file (the owner's, one link: checked on reading) whose owner part a rekey
                // could not seal again (a member broke the rename): its members' part, checked by its MAC,
                // holds the same keys. Anything else stays refused.
                guard (try? GroupKeyFile.peek(bytes, path: path))?.isShared == true,
                    let file = try? GroupKeyFile.decodeAsMember(bytes, group: group, vaultID: vaultID, path: path)
                else { throw error }
                return file
            }
        }
        return try GroupKeyFile.decodeAsMember(bytes, group: group, vaultID: vaultID, path: path)
    }

    /// The bytes of `group`'s key file, nil when there is none. It counts only when it is a regular
    /// file of the vault's owner with one link: a member may create files in a shared directory, and
    /// one of theirs named `group.key` is a forgery.
    private func readGroupKeyFile(_ group: GroupName, in directory: FileDescriptor) throws(StoreError) -> [UInt8]? {
        let path = groupPath(group) / GroupKeyFile.fileName
        let fd: FileDescriptor
        let status: FileStatus
        do {
            (fd, status) = try SmallFile.openRegular(GroupKeyFile.fileName, in: directory, path: path)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        defer { try? fd.close() }
        keyCache.withLock { $0.groupKeyInodes[group] = GroupKeyFileIdentity(status) }
        guard status.ownerID == ownerID, status.linkCount == 1 else {
            throw StoreError(
                .insecureFile,
                "\(path) belongs to uid \(status.ownerID), not to the vault's owner (uid \(ownerID)), or has "
                    + "\(status.linkCount) links: it is not the group's key (a member may have put it there)",
                path: path.string)
        }
        guard status.permissions.rawValue & 0o007 == 0 else {
            throw StoreError(
                .insecureFile,
                "\(path) can be read by others (mode \(status.permissions)): it may hold the group's keys; run "
                    + "`chmod o-rwx \(path)`",
                path: path.string)
        }
        // From the descriptor just checked: a member could put another file under the name in between.
        return try SmallFile.read(fd, status: status, path: path, limit: GroupKeyFile.maximumByteCount)
    }

    /// Under `group`'s write lock: forgets the group's keys when its `group.key` is no longer the file
    /// they were read from (a rotation, in another process, replaced it), so that this writer seals
    /// under the current key generation. One `fstatat`. The inode alone does not tell: a rotation
    /// writes `group.key` twice, and the second file may get the first one's freed inode number.
    func refreshGroupKeysIfReplaced(_ group: GroupName) {
        guard let known = keyCache.withLock({ $0.groupKeyInodes[group] }),
            let directory = try? groupDirectory(group, create: false)
        else { return }
        let current = (try? directory.statusAt(GroupKeyFile.fileName)).map(GroupKeyFileIdentity.init)
        if current != known {
            keyCache.withLock { state in
                state.groupKeys[group] = nil
                state.groupKeyInodes[group] = nil
            }
        }
    }

    /// Opens `group`'s `.lock`: a regular file of the vault's owner with one link.
    func openGroupLockFile(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        let path = groupPath(group) / Self.lockFileName
        // An existing group is locked as it is (a whole-vault transaction must not stop at a group whose
        // key is missing: that group's own reads and writes say so); a new one is made first.
        let directory: FileDescriptor
        if let existing = try groupDirectory(group, create: false) {
            directory = existing
        } else {
            directory = try existingGroupDirectory(group)
        }
        var fd: FileDescriptor
        do {
            fd = try directory.openAt(Self.lockFileName, [.readWrite, .nonBlocking])
        } catch {
            guard error == .noSuchFileOrDirectory, classKeys != nil else {
                throw StoreError.system(error, .open, "open the lock file", path: path)
            }
            // Removed (by a member, or by the owner after a refusal below): the owner makes it again.
            let shared = (try? keys(for: group).isShared) == true
            do {
                fd = try directory.openAt(
                    Self.lockFileName, [.readWrite, .create, .exclusiveCreate, .nonBlocking],
                    permissions: shared ? .ownerAndGroupReadWrite : .ownerReadWrite)
                if shared { try fd.setPermissions(.ownerAndGroupReadWrite) }
                WriterMark.idle.write(to: fd)
            } catch {
                throw StoreError.system(error, .open, "create the lock file", path: path)
            }
        }
        // `status(ofRegular:)` closes `fd` when it refuses it; a second close could close a descriptor
        // that another thread has opened under the same number since.
        let status = try SmallFile.status(ofRegular: fd, path: path, inspecting: "open the lock file")
        do throws(StoreError) {
            try requireGroupLock(status, path: path, group: group)
            return fd
        } catch {
            try? fd.close()
            throw error
        }
    }

    /// Refuses a `.lock` (of regular file `status`) that is not the vault's owner's with one link: a
    /// member may have put it there, e.g. as a hard link to a file outside the group.
    private func requireGroupLock(_ status: FileStatus, path: FilePath, group: GroupName) throws(StoreError) {
        guard status.ownerID == ownerID, status.linkCount == 1 else {
            throw StoreError(
                .insecureFile,
                "\(path) belongs to uid \(status.ownerID), not to the vault's owner (uid \(ownerID)), or has "
                    + "\(status.linkCount) links: it is not the group's lock (a member may have put it there), and "
                    + "writers locking it would not exclude each other; the owner can remove it (the owner's next "
                    + "write makes a new one)",
                path: path.string)
        }
    }

    /// Makes group `group` (the owner only): its directory, `group.key` and `.lock`. With
    /// `unixGroup`, a shared group: the directory `<owner>:<unixGroup>` 2770, the key file 0640 and the
    /// lock 0660, and the vault directory and `groups/` made traversable (0711) so that members reach
    /// it. Without, a private group (0700, 0600). Finishes a creation that was interrupted; refuses
    /// (`vaultAlreadyExists`) a group that exists.
    package func createGroup(_ group: GroupName, unixGroup: UInt32?) throws(StoreError) {
        let classKeys = try ownerClassKeys("create a group")
        // Under the vault's lock only, as every group is made (`withGroupCreationLock`): the other groups'
        // locks are not needed, and one that a member replaced must not stop a new group.
        try withGroupCreationLock { () throws(StoreError) in
            if let directory = try groupDirectory(group, create: false),
                try readGroupKeyFile(group, in: directory) != nil
            {
                throw StoreError(
                    .vaultAlreadyExists, "group \(group) already exists in the vault at \(path); nothing was changed",
                    path: groupPath(group).string)
            }
            try makeGroup(group, unixGroup: unixGroup, classKeys: classKeys)
            if unixGroup != nil { try updateSharedGroupIndexes() }
        }
    }

    /// The steps of `createGroup`, and of the first write to a private group that does not exist yet.
    func makeGroup(_ group: GroupName, unixGroup: UInt32?, classKeys: ClassKeys) throws(StoreError) {
        // Never a new key over items whose key is missing (they would then be lost for good).
        try refuseItemsWithoutKey(group, "restore it from a backup (its keys are nowhere else); nothing was written")
        let groupPath = groupPath(group)
        if let unixGroup { try makeSharedGroupDirectory(group, unixGroup: unixGroup) }
        guard let directory = try groupDirectory(group, create: true) else {
            throw StoreError(
                .io, "the group directory \(groupPath) disappeared while it was being made; try again",
                path: groupPath.string)
        }
        let shared = unixGroup != nil
        var secrets = try GroupSecrets.random()
        if !shared {
            secrets = GroupSecrets(
                indexKey: try privateIndexKey(group), keys: secrets.keys, currentGeneration: secrets.currentGeneration)
        }
        let file = GroupKeyFile(
            groupID: try randomGroupID(), isShared: shared, secrets: secrets)
        let encoded = try file.encoded(
            group: group, vaultID: vaultID,
            sealKey: try GroupKeyFile.sealKey(always: classKeys.always, groupID: file.groupID))
        // The lock first, saying idle: a key file without its lock would be a group no one can write.
        let lockPath = groupPath / Self.lockFileName
        do {
            let fd: FileDescriptor
            do {
                fd = try directory.openAt(
                    Self.lockFileName, [.readWrite, .create, .nonBlocking],
                    permissions: shared ? .ownerAndGroupReadWrite : .ownerReadWrite)
            } catch {
                throw StoreError.system(error, .open, "create the lock file", path: lockPath)
            }
            // An existing `.lock` may be anything a member put under the name (the owner's next write to a
            // group whose `group.key` a member removed comes here): nothing is written to it, nor its mode
            // changed, before it is known to be the owner's. `status(ofRegular:)` closes `fd` when it refuses.
            let status = try SmallFile.status(ofRegular: fd, path: lockPath, inspecting: "open the lock file")
            defer { try? fd.close() }
            try requireGroupLock(status, path: lockPath, group: group)
            do {
                if shared { try fd.setPermissions(.ownerAndGroupReadWrite) }
                if (try? fd.status().size) == 0 { WriterMark.idle.write(to: fd) }
                try fd.sync()
            } catch {
                throw StoreError.system(error, .open, "create the lock file", path: lockPath)
            }
        }
        do {
            try AtomicFile.createExclusively(
                GroupKeyFile.fileName, contents: .secret(encoded), in: directory, directoryPath: groupPath,
                permissions: shared ? .ownerWriteGroupRead : .ownerReadWrite)
        } catch  where error.errno == .fileExists {
            // Another first write made it at the same moment: theirs stands.
        }
        forgetKeysAndReplica(of: group)
    }

    /// Makes `group`'s directory (or takes the one an interrupted creation left) shared with the
    /// members of Unix group `unixGroup`: `<owner>:<unixGroup>` 2770, reached through a vault directory
    /// and `groups/` made traversable (0711).
    func makeSharedGroupDirectory(_ group: GroupName, unixGroup: UInt32) throws(StoreError) {
        let groupPath = groupPath(group)
        try makeTraversable(directory, path: location)
        try makeTraversable(groupsDirectory, path: groupsPath)
        do {
            try groupsDirectory.makeDirectoryAt(group.rawValue, permissions: .ownerAll)
        } catch {
            guard error == .fileExists else {
                throw StoreError.system(error, .mkdir, "create the group directory", path: groupPath)
            }
        }
        let made = try VaultDirectory.openGroupDirectory(
            group.rawValue, in: groupsDirectory, path: groupPath, owner: ownerID)
        defer { try? made.close() }
        do {
            try made.setOwner(group: unixGroup)
            try made.setPermissions(.sharedDirectory)
        } catch {
            throw StoreError.system(error, .chmod, "make the shared group directory", path: groupPath)
        }
        try AtomicFile.syncDirectory(groupsDirectory, path: groupsPath)
    }

    private func randomGroupID() throws(StoreError) -> [UInt8] {
        do {
            return try SecureRandom.bytes(count: GroupKeyFile.groupIDByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a group id")
        }
    }

    /// Adds search permission for group and others (0711) to a directory of the vault that has none.
    private func makeTraversable(_ directory: FileDescriptor, path: FilePath) throws(StoreError) {
        do {
            let status = try directory.status()
            let mode = status.permissions.rawValue
            if mode & 0o011 != 0o011 { try directory.setPermissions(FilePermissions(rawValue: mode | 0o011)) }
        } catch {
            throw StoreError.system(error, .chmod, "make traversable for the group's members", path: path)
        }
    }

    /// The mode of files that every member of `group` writes and reads (0660 in a shared group).
    func memberFilePermissions(_ group: GroupName) -> FilePermissions {
        (try? keys(for: group).isShared) == true ? .ownerAndGroupReadWrite : .ownerReadWrite
    }
}
