import VaultCrypto
import VaultSystem

/// How a fleet group comes to a machine (`VaultStore+Fleet.swift` has how it is used): made and
/// registered with its replica, or joined with a key file another machine exported, its directory
/// installed (private, or shared with a Unix group), its key exported; and the files an operator
/// hands it (the exported key, etcd's password).
extension VaultStore {
    static let fleetCheckDomain = KeyDerivation.Domain("vault.fchk.v2")

    /// The check value of a fleet group's key that its registration holds: a keyed hash of the group
    /// id under a key derived from its index key (the key itself never leaves the machine).
    static func fleetCheck(_ file: GroupKeyFile) throws(StoreError) -> [UInt8] {
        do {
            return try KeyDerivation.keyedHash(file.groupID, key: file.secrets.indexKey, domain: fleetCheckDomain)
        } catch {
            throw StoreError.crypto(error, "cannot compute the check value of a fleet group's key")
        }
    }

    /// Makes fleet group `group`: a new key, registered with the replica that `settings` names, then
    /// its directory with `fleet.conf`, `group.key` and `.lock`; private to the owner, or with
    /// `unixGroup` (a gid) shared on this machine with that Unix group's members as `createGroup` shares
    /// a group (the directory 2770, `group.key` and `fleet.conf` 0640, the cache's files 0660).
    public func createFleetGroup(_ group: GroupName, settings: FleetSettings, unixGroup: UInt32? = nil)
        throws(StoreError)
    {
        let file = GroupKeyFile(
            groupID: try Self.randomFleetGroupID(), isShared: unixGroup != nil, secrets: try GroupSecrets.random(),
            isFleet: true)
        try addFleetGroup(group, file: file, settings: settings, unixGroup: unixGroup, what: "create a group") {
            (replica, check) throws(StoreError) in try replica.register(check: check)
        }
    }

    /// Joins fleet group `group` that another machine made: `keyFile` is what `exportFleetGroupKey`
    /// wrote there; checked against the replica's registration, then the directory is made (private, or
    /// shared with Unix group `unixGroup` as `createFleetGroup` makes it) and filled from the replica.
    public func joinFleetGroup(
        _ group: GroupName, keyFile: [UInt8], settings: FleetSettings, unixGroup: UInt32? = nil
    ) throws(StoreError) {
        let given = try GroupKeyFile.decodeAsMember(keyFile, group: group, vaultID: [], path: "the key file")
        guard given.isFleet else {
            throw StoreError(.invalidName, "the key file is not a fleet group's key (exported for group \(group)?)")
        }
        let file = GroupKeyFile(
            groupID: given.groupID, isShared: unixGroup != nil, secrets: given.secrets, isFleet: true)
        try addFleetGroup(group, file: file, settings: settings, unixGroup: unixGroup, what: "join a group") {
            (replica, check) throws(StoreError) in try replica.verifyRegistration(check: check)
        }
        try withWriteLock(groups: [group]) { (_) throws(StoreError) in _ = try refreshReplicaIfStale(group) }
    }

    /// The steps `createFleetGroup` and `joinFleetGroup` share, under the vault's lock: `group` must not
    /// exist here; `agree` registers `file`'s check value with the replica or checks it against the
    /// registration; then the directory is made.
    private func addFleetGroup(
        _ group: GroupName, file: GroupKeyFile, settings: FleetSettings, unixGroup: UInt32?, what: String,
        agree: (GroupReplica, [UInt8]) throws(StoreError) -> Void
    ) throws(StoreError) {
        let classKeys = try ownerClassKeys(what)
        if let unixGroup {
            // Before anything is registered or made: the kernel lets only root and the Unix group's
            // members give a directory to it.
            let uid = ProcessIdentity.effectiveUserID
            guard uid == 0 || ProcessIdentity.groupIDs.contains(unixGroup) else {
                throw StoreError(
                    .permissionDenied,
                    "uid \(uid) is not a member of the Unix group with gid \(unixGroup), and the kernel lets only root "
                        + "and the group's members give a directory to it: nothing was changed")
            }
        }
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in
            try requireCurrentKeys()
            if try groupDirectory(group, create: false) != nil {
                throw StoreError(
                    .vaultAlreadyExists, "group \(group) already exists in the vault at \(path); nothing was changed",
                    path: groupPath(group).string)
            }
            let replica = try Self.makeReplica(
                try FleetGroupIdentity(group: group, file: file, settings: settings, vaultOwnerID: ownerID))
            try agree(replica, try Self.fleetCheck(file))
            try installFleetGroup(group, file: file, settings: settings, unixGroup: unixGroup, classKeys: classKeys)
        }
    }

    /// Fleet group `group`'s key as a file for other machines (its members' form: the keys in the
    /// clear with their MAC, bound to the group's name only). Secret: whoever holds it reads the group.
    public func exportFleetGroupKey(_ group: GroupName) throws(StoreError) -> SecureBytes {
        _ = try ownerClassKeys("export a group's key")
        guard let file = try loadGroupKeyFile(group), file.isFleet else { throw try notAFleetGroup(group) }
        let portable = GroupKeyFile(groupID: file.groupID, isShared: true, secrets: file.secrets, isFleet: true)
        let sealKey: SymmetricKey
        do {
            sealKey = try SymmetricKey.random()
        } catch {
            throw StoreError.crypto(error, "cannot export the key of group \(group)")
        }
        return try portable.encoded(group: group, vaultID: [], sealKey: sealKey)
    }

    /// Writes `exportFleetGroupKey(group)` to the new file `path` (0600, created exclusively and
    /// durably; an existing file is never written over).
    public func exportFleetGroupKey(_ group: GroupName, to path: String) throws(StoreError) {
        let bytes = try exportFleetGroupKey(group)
        let file = FilePath(path)
        let directory = try VaultDirectory.openOutside(file.parent, verb: "open the directory of the key file")
        defer { try? directory.close() }
        do {
            try AtomicFile.createExclusively(
                file.lastComponent, contents: .secret(bytes), in: directory, directoryPath: file.parent)
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; a key file is never written over", path: path)
        }
    }

    /// The first line of fleet group `group`'s etcd password file `path`, in secure memory: a regular
    /// file (no symlink, FIFO or device) of at most 4 KiB. A process other than the vault's owner (a
    /// member of a shared fleet group) reads it only when it is the owner's file: the owner wrote the
    /// settings that name it, and a file of anyone else's (the member's own credentials, a file the
    /// member may read through one of its groups) would go to the owner's endpoint as the password.
    public static func readFleetPasswordFile(_ path: String, group: GroupName, vaultOwnerID: UInt32)
        throws(StoreError) -> SecureBytes
    {
        let file = FilePath(path)
        let directory = try VaultDirectory.openOutside(
            file.parent, verb: "open the directory of the etcd password file of fleet group \(group)")
        defer { try? directory.close() }
        let fd: FileDescriptor
        let status: FileStatus
        do {
            (fd, status) = try SmallFile.openRegular(file.lastComponent, in: directory, path: file)
        } catch {
            throw StoreError(
                error.code, "the etcd password file of fleet group \(group): \(error.message)", path: path, cause: error
            )
        }
        defer { try? fd.close() }
        if ProcessIdentity.effectiveUserID != vaultOwnerID, status.ownerID != vaultOwnerID {
            throw StoreError(
                .insecureFile,
                "\(path), the etcd password file that fleet group \(group)'s settings name, belongs to uid "
                    + "\(status.ownerID), not to the vault's owner (uid \(vaultOwnerID)): a member reads only the "
                    + "owner's (e.g. owner:UNIXGROUP 0640), and nothing was sent",
                path: path)
        }
        var bytes = try SmallFile.read(fd, status: status, path: file, limit: 4096)
        defer { bytes.wipe() }
        var line = Array(bytes.prefix { $0 != 10 })
        defer { line.wipe() }
        do {
            return try SecureBytes(copying: line)
        } catch {
            throw StoreError.crypto(error, "cannot hold the etcd password of fleet group \(group)")
        }
    }

    /// The bytes of a key file that `exportFleetGroupKey(_:to:)` wrote, for `joinFleetGroup`.
    public static func readFleetKeyFile(_ path: String) throws(StoreError) -> [UInt8] {
        let file = FilePath(path)
        let directory = try VaultDirectory.openOutside(file.parent, verb: "open the directory of the key file")
        defer { try? directory.close() }
        return try SmallFile.read(file.lastComponent, in: directory, path: file, limit: GroupKeyFile.maximumByteCount)
    }

    /// Makes the directory of new fleet group `group` with its settings, lock and key; on a failure,
    /// removes what it made, so that the group can be made or joined again.
    private func installFleetGroup(
        _ group: GroupName, file: GroupKeyFile, settings: FleetSettings, unixGroup: UInt32?, classKeys: ClassKeys
    ) throws(StoreError) {
        do throws(StoreError) {
            try fillFleetGroup(group, file: file, settings: settings, unixGroup: unixGroup, classKeys: classKeys)
        } catch {
            state.withLock { state in
                if let fd = state.groupDirectories.removeValue(forKey: group) { state.retiredDescriptors.append(fd) }
                state.groupKeys[group] = nil
                state.replicas[group] = nil
            }
            try? VaultDirectory.removeTree(group.rawValue, in: groupsDirectory, path: groupsPath)
            throw error
        }
    }

    private func fillFleetGroup(
        _ group: GroupName, file: GroupKeyFile, settings: FleetSettings, unixGroup: UInt32?, classKeys: ClassKeys
    ) throws(StoreError) {
        if let unixGroup { try makeSharedGroupDirectory(group, unixGroup: unixGroup) }
        guard let directory = try groupDirectory(group, create: true) else {
            throw StoreError(.io, "the group directory \(groupPath(group)) disappeared while it was being made")
        }
        let shared = unixGroup != nil
        // Members read the settings (they reach etcd themselves); only the owner writes them.
        try AtomicFile.replace(
            FleetSettings.fileName, contents: .plain(Array(settings.encoded().utf8)), in: directory,
            directoryPath: groupPath(group), permissions: shared ? .ownerWriteGroupRead : .ownerReadWrite)
        let lockPath = groupPath(group) / Self.lockFileName
        let lock: FileDescriptor
        do {
            // Made anew (the directory is new): anything already under the name was put there by a member
            // of a shared group since, and is never written to nor given a mode.
            lock = try directory.openAt(
                Self.lockFileName, [.readWrite, .create, .exclusiveCreate, .nonBlocking],
                permissions: shared ? .ownerAndGroupReadWrite : .ownerReadWrite)
        } catch {
            throw StoreError.system(error, .open, "create the lock file", path: lockPath)
        }
        defer { try? lock.close() }
        do {
            // The umask must not take the members' bits away: they lock it to write.
            if shared { try lock.setPermissions(.ownerAndGroupReadWrite) }
        } catch {
            throw StoreError.system(error, .chmod, "set the mode of the lock file", path: lockPath)
        }
        WriterMark.idle.write(to: lock)
        try writeGroupKeyFile(file, group: group, in: directory, classKeys: classKeys)
        state.withLock {
            _ = $0.groupKeys.removeValue(forKey: group)
            _ = $0.replicas.removeValue(forKey: group)
        }
    }

    private static func randomFleetGroupID() throws(StoreError) -> [UInt8] {
        do {
            return try SecureRandom.bytes(count: GroupKeyFile.groupIDByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a group id")
        }
    }
}
