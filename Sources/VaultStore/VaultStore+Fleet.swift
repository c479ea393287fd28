import FoundationEssentials
import VaultCrypto
import VaultSystem

/// Fleet groups (format 2): a group whose items also live in a replica every machine shares (etcd),
/// reached through the `GroupReplica` that `fleetReplicas` makes. The directory is the replica's cache:
/// the same item-file bytes, refreshed under the group's lock before a transaction and before a read
/// when the last refresh is more than a second old; every write and delete goes to the replica first
/// (compare-and-swap on what the last refresh saw), then to the cache.
extension VaultStore {
    static let fleetCheckDomain = KeyDerivation.Domain("vault.fchk.v2")

    /// The replica of `group`, or nil for a group that is not a fleet group.
    func replica(for group: GroupName) throws(StoreError) -> GroupReplica? {
        if formatVersion < 2 { return nil }
        if let known = state.withLock({ $0.replicas[group] }) { return known }
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let settingsPath = groupPath(group) / FleetSettings.fileName
        guard let bytes = try readFleetSettingsFile(in: directory, path: settingsPath) else {
            // A fleet group without its settings is not a local group: served as one, its writes would
            // stay on this machine and its reads go unchecked (a member can remove the file).
            if (try? keys(for: group))?.isFleet == true {
                throw StoreError(
                    .integrity,
                    "\(settingsPath) is missing, but group \(group) is a fleet group (its group.key says so): its "
                        + "items live in etcd, and nothing is read or written until the owner puts the settings back "
                        + "(`vault group rm \(group) --force`, then `vault group join`, makes them anew)",
                    path: settingsPath.string)
            }
            state.withLock { $0.replicas[group] = .some(nil) }
            return nil
        }
        guard let settings = FleetSettings.decode(String(decoding: bytes, as: UTF8.self)) else {
            throw StoreError(
                .integrity, "\(settingsPath) is not a fleet group's settings file", path: settingsPath.string)
        }
        guard let file = try loadGroupKeyFile(group), file.isFleet else {
            throw StoreError(
                .integrity, "\(settingsPath) is there but group \(group)'s group.key is not a fleet group's",
                path: settingsPath.string)
        }
        let replica = try Self.makeReplica(
            try FleetGroupIdentity(group: group, file: file, settings: settings, vaultOwnerID: ownerID))
        state.withLock { $0.replicas[group] = .some(replica) }
        return replica
    }

    /// The bytes of a group's `fleet.conf`, nil when it has none. It counts only as a regular file of
    /// the vault's owner with one link that no one else may write: in a shared group's directory a
    /// member may put files, and a `fleet.conf` of theirs could send every user of the group, the owner
    /// included, to an etcd of theirs with the contents of any file the victim can read as its
    /// "password" (the settings name files).
    private func readFleetSettingsFile(in directory: FileDescriptor, path: FilePath) throws(StoreError) -> [UInt8]? {
        let fd: FileDescriptor
        do {
            fd = try directory.openAt(FleetSettings.fileName, [.readOnly, .nonBlocking])
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StoreError.system(error, .open, "open", path: path)
        }
        // `status(ofRegular:)` closes `fd` when it refuses it: close it here only after that.
        let status = try SmallFile.status(ofRegular: fd, path: path, inspecting: "open")
        defer { try? fd.close() }
        let refusal: String? =
            if status.ownerID != ownerID {
                "belongs to uid \(status.ownerID), not to the vault's owner (uid \(ownerID))"
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
                "\(path) \(refusal): it is not the fleet group's settings (a member may have put it there), and "
                    + "nothing was sent to the endpoints it names",
                path: path.string)
        }
        return try SmallFile.read(fd, status: status, path: path, limit: 64 * 1024)
    }

    /// The refusal of `group` where a fleet group is needed: `groupNotFound` when the vault has no such
    /// group, `invalidName` when it is a group of another kind.
    func notAFleetGroup(_ group: GroupName) throws(StoreError) -> StoreError {
        guard try groupDirectory(group, create: false) != nil else {
            return StoreError(
                .groupNotFound, "there is no group \(group) in the vault at \(path)", path: groupPath(group).string)
        }
        return StoreError(.invalidName, "group \(group) is not a fleet group", path: groupPath(group).string)
    }

    /// Whether `group` is a fleet group (its directory has `fleet.conf`).
    public func isFleetGroup(_ group: GroupName) -> Bool {
        guard formatVersion >= 2 else { return false }
        if let known = state.withLock({ $0.replicas[group] }) { return known != nil }
        guard let directory = try? groupDirectory(group, create: false) else { return false }
        return (try? directory.statusAt(FleetSettings.fileName)) != nil
    }

    static func makeReplica(_ identity: FleetGroupIdentity) throws(StoreError) -> GroupReplica {
        guard let make = fleetReplicas.withLock({ $0 }) else {
            throw StoreError(
                .cryptoUnavailable,
                "group \(identity.group) is a fleet group (its items are in etcd), and this program has no etcd "
                    + "client: link VaultFleet and call VaultFleet.install() (the static vault CLI hands fleet groups "
                    + "to vault-fleet)")
        }
        return try make(identity)
    }

    /// Refreshes fleet group `group`'s cache now (under its lock, which the caller holds).
    /// Returns whether the cache changed.
    func refreshReplica(_ group: GroupName) throws(StoreError) -> Bool {
        guard let replica = try replica(for: group) else { return false }
        let cache = ReplicaCache(store: self, group: group)
        try replica.refresh(cache)
        let now = ContinuousClock.now
        let confirmed = FileTimestampClock.now()
        state.withLock {
            $0.replicaRefreshed[group] = now
            $0.fleetCacheStatus[group] = FleetCacheStatus(isStale: false, knownCurrentAt: confirmed)
            _ = $0.replicaUnreachableUntil.removeValue(forKey: group)
        }
        return cache.changes.count > 0
    }

    /// Before a read of `group` outside a transaction: a fleet group's cache is checked against the
    /// replica (its keys and revisions, one linearizable read; none while the replica's watch vouches
    /// for it, `GroupReplica.isKnownCurrent`) and refreshed under the group's lock when they differ.
    /// With the replica out of reach, the read is served from the cache (`fleetCacheStatus` says so),
    /// unless reads must be fresh (`requireFreshFleetReads`: then every read asks etcd, and fails as
    /// `unavailable` when it cannot).
    /// Returns whether this call refreshed the cache inside this thread's transaction and found it
    /// changed: then what the transaction read of the group before may be stale (a write then reruns it).
    @discardableResult
    func refreshReplicaIfStale(_ group: GroupName) throws(StoreError) -> Bool {
        guard formatVersion >= 2, let replica = try replica(for: group) else { return false }
        let thread = ProcessIdentity.threadID
        let inTransaction = state.withLock { (state) -> Bool? in
            guard state.writerThread == thread else { return nil }
            // This thread's own transaction: once, and only for a group whose lock it holds.
            guard state.transactionGroups?.contains(group) ?? true, !state.refreshedInTransaction.contains(group)
            else { return true }
            state.refreshedInTransaction.insert(group)
            return false
        }
        if let inTransaction {
            if inTransaction { return false }
            // A watch that vouches for the cache stands for the refresh: every change to the group
            // changes its manifest, so a write's compare on the manifest fails if the cache was stale
            // after all (a conflict: the rerun refreshes).
            if !state.withLock({ $0.freshFleetReadsOnly }), replica.isKnownCurrent() {
                noteVouched(group)
                return false
            }
            return try refreshReplica(group)
        }
        let (refreshedBefore, freshOnly, unreachableUntil) = state.withLock {
            ($0.replicaRefreshed[group] != nil, $0.freshFleetReadsOnly, $0.replicaUnreachableUntil[group])
        }
        if refreshedBefore, !freshOnly, replica.isKnownCurrent() {
            noteVouched(group)
            return false
        }
        if !freshOnly, let unreachableUntil, ContinuousClock.now < unreachableUntil {
            // Out of reach a moment ago: answered from the cache (still marked stale) without waiting
            // for the time limit again.
            return false
        }
        do throws(StoreError) {
            var current = false
            if refreshedBefore { current = try replica.isCurrent() }
            if !current {
                // The check found the cache stale: refreshed under the lock, whatever the watch says.
                try withWriteLock(groups: [group]) { (_) throws(StoreError) in
                    state.withLock { _ = $0.refreshedInTransaction.insert(group) }
                    _ = try refreshReplica(group)
                }
            }
            let now = FileTimestampClock.now()
            state.withLock {
                $0.fleetCacheStatus[group] = FleetCacheStatus(isStale: false, knownCurrentAt: now)
                _ = $0.replicaUnreachableUntil.removeValue(forKey: group)
            }
        } catch  where error.code == .unavailable {
            let known = state.withLock { $0.fleetCacheStatus[group] }
            let since = known?.knownCurrentAt ?? fleetMarkTime(group)
            if !freshOnly {
                let retry = ContinuousClock.now + Self.unreachableRetryInterval
                state.withLock {
                    $0.fleetCacheStatus[group] = FleetCacheStatus(isStale: true, knownCurrentAt: since)
                    $0.replicaUnreachableUntil[group] = retry
                }
            } else {
                throw StoreError(
                    .unavailable,
                    "\(error.message); fresh reads only: not answered from this machine's cache (last known current "
                        + "\(since.map(Self.describeTime) ?? "never"))", cause: error)
            }
        }
        return false
    }

    /// A read or write on the watch's word: etcd is in reach after all, so a cache status that still
    /// says stale (from before the watch came back) is corrected.
    private func noteVouched(_ group: GroupName) {
        guard state.withLock({ $0.fleetCacheStatus[group]?.isStale == true }) else { return }
        let now = FileTimestampClock.now()
        state.withLock { $0.fleetCacheStatus[group] = FleetCacheStatus(isStale: false, knownCurrentAt: now) }
    }

    /// How long reads of a fleet group whose replica was out of reach answer from the cache before they
    /// try again (fresh-only reads always try).
    static let unreachableRetryInterval = Duration.seconds(1)

    /// How this process last answered a read of fleet group `group` (nil: not a fleet group, or not
    /// read yet).
    public func fleetCacheStatus(_ group: GroupName) -> FleetCacheStatus? {
        state.withLock { $0.fleetCacheStatus[group] }
    }

    /// Makes every read of a fleet group confirmed by etcd (never vouched for by the watch alone), and
    /// failed (`unavailable`) rather than answered from a cache that etcd could not confirm.
    public func requireFreshFleetReads(_ required: Bool) {
        state.withLock { $0.freshFleetReadsOnly = required }
    }

    /// A time in nanoseconds since the epoch, in ISO 8601 (UTC): `2026-12-01T21:05:03Z`.
    static func describeTime(_ nanoseconds: Int64) -> String {
        Date(timeIntervalSince1970: Double(nanoseconds) / 1e9).ISO8601Format()
    }

    /// Before a replica write: the group refreshed in this transaction (now, if nothing read it yet). A
    /// refresh now that changed the cache means what the transaction decided on may be stale: a
    /// `conflict`, which runs the transaction again.
    func requireUnchangedReplica(_ group: GroupName) throws(StoreError) {
        guard try refreshReplicaIfStale(group) else { return }
        state.withLock { _ = $0.conflictedThreads.insert(ProcessIdentity.threadID) }
        throw StoreError(.conflict, "fleet group \(group) changed on another machine during this transaction")
    }

    /// After a replica write whose local half failed: the next read refreshes the cache.
    func forgetReplicaState(_ group: GroupName, _ replica: GroupReplica) {
        replica.forget()
        state.withLock { _ = $0.replicaRefreshed.removeValue(forKey: group) }
    }

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
        guard formatVersion >= 2 else {
            throw StoreError(
                .unsupportedFormat, "fleet groups need a format-2 vault (`vault upgrade` converts the vault at \(path))"
            )
        }
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
        do {
            fd = try directory.openAt(file.lastComponent, [.readOnly, .nonBlocking])
        } catch {
            throw StoreError.system(
                error, .open, "open the etcd password file of fleet group \(group)", path: file)
        }
        let status = try SmallFile.status(ofRegular: fd, path: file, inspecting: "open")
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
        defer { for index in bytes.indices { bytes[index] = 0 } }
        var line = Array(bytes.prefix { $0 != 10 })
        defer { for index in line.indices { line[index] = 0 } }
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

    /// Whether group directory `group` of the vault at `vaultPath` is a fleet group's (it has
    /// `fleet.conf`): one `stat`, before the vault is opened.
    public static func isFleetGroup(vaultPath: String, group: GroupName) -> Bool {
        let path = FilePath(vaultPath) / groupsDirectoryName / group.rawValue / FleetSettings.fileName
        return (try? FileDescriptor.currentWorkingDirectory.statusAt(path.string)) != nil
    }

    /// Whether this process can use fleet groups (a replica maker is installed).
    public static var hasFleetSupport: Bool { fleetReplicas.withLock { $0 != nil } }

    /// Makes the directory of new fleet group `group` with its settings, lock and key; on a failure,
    /// removes what it made, so that the group can be made or joined again.
    private func installFleetGroup(
        _ group: GroupName, file: GroupKeyFile, settings: FleetSettings, unixGroup: UInt32?, classKeys: ClassKeys
    ) throws(StoreError) {
        do throws(StoreError) {
            try fillFleetGroup(group, file: file, settings: settings, unixGroup: unixGroup, classKeys: classKeys)
        } catch {
            state.withLock { state in
                if let fd = state.groupDirectories.removeValue(forKey: group) { try? fd.close() }
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

    /// Runs a replica's write; a `conflict` is noted for `withWriteLock`, which then runs the whole
    /// transaction again on a fresh cache.
    func noticingConflicts(_ body: () throws(StoreError) -> Void) throws(StoreError) {
        do {
            try body()
        } catch  where error.code == .conflict {
            state.withLock { _ = $0.conflictedThreads.insert(ProcessIdentity.threadID) }
            throw error
        }
    }

    // MARK: The cache, for the replica

    /// The cached file of `item`, or nil.
    func cachedItemFile(_ item: ItemLocation) throws(StoreError) -> [UInt8]? {
        guard let directory = try groupDirectory(item.group, create: false) else { return nil }
        return try SmallFile.readIfPresent(
            item.id.fileName, in: directory, path: itemPath(item), limit: ItemFile.maximumFileByteCount)
    }

    /// Caches `contents` as `item`'s file once it opens as that item under the group's keys.
    func cacheItemFile(_ contents: [UInt8], as item: ItemLocation) throws(StoreError) {
        try checkItemFile(contents, as: item)
        let directory = try existingGroupDirectory(item.group)
        // The item's generation record goes with it: the replica's file may be of an older generation
        // than this machine wrote (a rollback an operator accepted), and the manifest guards versions.
        try ItemWrite(
            contents: contents, name: item.id.fileName, record: (GenerationRecord.name(item.id), nil), durable: true,
            reusingSpare: false, permissions: memberFilePermissions(item.group)
        )
        .run(in: directory, directoryPath: groupPath(item.group))
    }

    /// Removes `item`'s cached file and its generation record.
    func uncacheItemFile(_ item: ItemLocation) throws(StoreError) {
        guard let directory = try groupDirectory(item.group, create: false) else { return }
        _ = try AtomicFile.remove(
            item.id.fileName, in: directory, directoryPath: groupPath(item.group),
            alsoRemove: GenerationRecord.name(item.id))
    }
}
