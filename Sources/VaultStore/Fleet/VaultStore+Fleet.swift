import FoundationEssentials
import VaultCrypto
import VaultSystem

/// Fleet groups: a group whose items also live in a replica every machine shares (etcd),
/// reached through the `GroupReplica` that `fleetReplicas` makes. The directory is the replica's cache:
/// the same item-file bytes, refreshed under the group's lock before a transaction and before a read
/// when the last refresh is more than a second old; every write and delete goes to the replica first
/// (compare-and-swap on what the last refresh saw), then to the cache.
extension VaultStore {
    /// The replica of `group`, or nil for a group that is not a fleet group.
    func replica(for group: GroupName) throws(StoreError) -> GroupReplica? {
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
        let status: FileStatus
        do {
            (fd, status) = try SmallFile.openRegular(FleetSettings.fileName, in: directory, path: path)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
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
        state.withLock { $0.replicaRefreshed[group] = now }
        noteConfirmed(group)
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
        guard let replica = try replica(for: group) else { return false }
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
            if current { noteConfirmed(group) }
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
        if state.withLock({ $0.fleetCacheStatus[group]?.isStale == true }) { noteConfirmed(group) }
    }

    /// etcd confirmed `group`'s cache just now: its status says so, and reads ask etcd again.
    private func noteConfirmed(_ group: GroupName) {
        let now = FileTimestampClock.now()
        state.withLock {
            $0.fleetCacheStatus[group] = FleetCacheStatus(isStale: false, knownCurrentAt: now)
            _ = $0.replicaUnreachableUntil.removeValue(forKey: group)
        }
    }

    /// How long reads of a fleet group whose replica was out of reach answer from the cache before they
    /// try again (fresh-only reads always try).
    static let unreachableRetryInterval = Duration.seconds(1)

    /// How this process last answered a read of fleet group `group`, and why its watch is not running
    /// if the last one failed (nil: not a fleet group, or not read yet).
    public func fleetCacheStatus(_ group: GroupName) -> FleetCacheStatus? {
        let (status, replica) = state.withLock { ($0.fleetCacheStatus[group], $0.replicas[group] ?? nil) }
        guard var status else { return nil }
        status.watchFailure = replica?.watchFailure()
        return status
    }

    /// Makes every read of a fleet group confirmed by etcd (never vouched for by the watch alone), and
    /// failed (`unavailable`) rather than answered from a cache that etcd could not confirm.
    public func requireFreshFleetReads(_ required: Bool) {
        state.withLock { $0.freshFleetReadsOnly = required }
    }

    /// A time in nanoseconds since the epoch, in ISO 8601 (UTC): `2026-12-01T21:05:03Z`.
    static func describeTime(_ nanoseconds: Int64) -> String {
        UTCTimestamp.iso8601(nanosecondsSince1970: nanoseconds)
    }

    /// Before a replica write: the group refreshed in this transaction (now, if nothing read it yet). A
    /// refresh now that changed the cache means what the transaction decided on may be stale: a
    /// `conflict`, which runs the transaction again.
    func requireUnchangedReplica(_ group: GroupName) throws(StoreError) {
        guard try refreshReplicaIfStale(group) else { return }
        state.withLock { _ = $0.conflictedThreads.insert(ProcessIdentity.threadID) }
        throw StoreError(.conflict, "fleet group \(group) changed on another machine during this transaction")
    }

    /// After a replica write whose local half failed with `error`: the next read refreshes the cache,
    /// and the error to throw says that the change reached etcd (`StoreError.afterReplicaCommit`).
    func localHalfFailed(_ error: StoreError, group: GroupName, _ replica: GroupReplica) -> StoreError {
        replica.forget()
        state.withLock { _ = $0.replicaRefreshed.removeValue(forKey: group) }
        return .afterReplicaCommit(error, group: group)
    }

    /// Whether group directory `group` of the vault at `vaultPath` is a fleet group's (it has
    /// `fleet.conf`): one `stat`, before the vault is opened.
    public static func isFleetGroup(vaultPath: String, group: GroupName) -> Bool {
        let path = FilePath(vaultPath) / groupsDirectoryName / group.rawValue / FleetSettings.fileName
        return (try? FileDescriptor.currentWorkingDirectory.statusAt(path.string)) != nil
    }

    /// Whether this process can use fleet groups (a replica maker is installed).
    public static var hasFleetSupport: Bool { fleetReplicas.withLock { $0 != nil } }

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
