import Synchronization
import Vault
import VaultStore
import VaultSystem

/// A fleet group as its store sees it: the directory is the cache of the group's items in etcd
/// (`EtcdReplica`), checked before a read of it when the last check is more than a second old and
/// brought up to date under the group's lock when it differs; every write and delete goes to etcd
/// first (compare-and-swap on what the last refresh saw), then to the cache. With etcd out of reach,
/// reads are answered from the cache (`status` says so) unless the vault's reads must be fresh.
final class FleetGroup: GroupReplica {
    let replica: EtcdReplica
    /// The engine of the vault this group is in: whether its reads must be fresh.
    let fleet: EtcdFleet

    struct State {
        /// When the cache was last brought up to date in this process (nil: not yet, or forgotten).
        var refreshedAt: ContinuousClock.Instant?
        /// How the last read was answered.
        var status: FleetCacheStatus?
        /// Until when reads, etcd having been out of reach, answer from the cache without asking again
        /// (a member that accepts connections but does not answer costs each try the request time limit).
        var unreachableUntil: ContinuousClock.Instant?
    }
    let state = Mutex(State())

    var name: String { "etcd" }

    init(replica: EtcdReplica, fleet: EtcdFleet) {
        self.replica = replica
        self.fleet = fleet
    }

    /// How long reads whose replica was out of reach answer from the cache before they try again
    /// (fresh-only reads always try).
    static let unreachableRetryInterval = Duration.seconds(1)

    func refreshInTransaction(_ cache: ReplicaCache) throws(StoreError) -> Bool {
        // A watch that vouches for the cache stands for the refresh: every change to the group changes
        // its manifest, so a write's compare on the manifest fails if the cache was stale after all (a
        // conflict: the rerun refreshes).
        if !fleet.freshReadsOnly, replica.isKnownCurrent() {
            noteVouched()
            return false
        }
        // A process that does not watch (a command, the C API) reads the manifest alone when it is the
        // one its machine's last complete refresh recorded: the cache is current, and a write needs no
        // item of etcd's but its own.
        let started = ContinuousClock.now
        if !fleet.freshReadsOnly, !replica.watching, try replica.adoptCacheIfCurrent(cache) {
            noteRefreshed(startedAt: started)
            return false
        }
        return try refresh(cache)
    }

    func prepareRead(_ cache: ReplicaCache) throws(StoreError) {
        let freshOnly = fleet.freshReadsOnly
        let (refreshedBefore, unreachableUntil) = state.withLock { ($0.refreshedAt != nil, $0.unreachableUntil) }
        if refreshedBefore, !freshOnly, replica.isKnownCurrent() {
            noteVouched()
            return
        }
        if !freshOnly, let unreachableUntil, ContinuousClock.now < unreachableUntil {
            // Out of reach a moment ago: answered from the cache (still marked stale) without waiting
            // for the time limit again.
            return
        }
        do throws(StoreError) {
            var current = false
            if refreshedBefore {
                current = try replica.isCurrent(checkingItems: freshOnly)
            } else if !freshOnly, !replica.watching {
                // A process that does not watch (a command, the C API) takes the cache for current when
                // etcd's manifest is the one its last complete refresh recorded: no read of every item.
                let started = ContinuousClock.now
                current = try replica.adoptCacheIfCurrent(cache)
                if current { state.withLock { $0.refreshedAt = started } }
            }
            if current {
                noteConfirmed()
            } else {
                // The check found the cache stale: refreshed under the lock, whatever the watch says, unless
                // another thread did (or found etcd out of reach) while this one waited for the lock.
                let asked = ContinuousClock.now
                _ = try cache.withGroupLock { () throws(StoreError) in
                    let done = state.withLock { state in
                        state.refreshedAt.map { $0 > asked } == true
                            || !freshOnly && state.unreachableUntil.map { ContinuousClock.now < $0 } == true
                    }
                    if done { return false }
                    do throws(StoreError) {
                        return try refresh(cache, recording: !replica.watching)
                    } catch  where error.code == .unavailable && !freshOnly {
                        // Before the lock goes: the threads waiting for it answer from the cache at once, and
                        // say so.
                        noteUnreachable(cache)
                        throw error
                    }
                }
            }
        } catch  where error.code == .unavailable {
            guard !freshOnly else {
                let since = state.withLock { $0.status?.knownCurrentAt } ?? cache.highWaterMarkTime
                throw StoreError(
                    .unavailable,
                    "\(error.message); fresh reads only: not answered from this machine's cache (last known current "
                        + "\(since.map(UTCTimestamp.iso8601(nanosecondsSince1970:)) ?? "never"))", cause: error)
            }
            noteUnreachable(cache)
        }
    }

    /// etcd was out of reach just now: reads answer from the cache, marked stale (as of when the cache
    /// was last confirmed), without asking again for `unreachableRetryInterval`.
    private func noteUnreachable(_ cache: ReplicaCache) {
        let retry = ContinuousClock.now + Self.unreachableRetryInterval
        let since = state.withLock { $0.status?.knownCurrentAt } ?? cache.highWaterMarkTime
        state.withLock {
            $0.status = FleetCacheStatus(isStale: true, knownCurrentAt: $0.status?.knownCurrentAt ?? since)
            $0.unreachableUntil = retry
        }
    }

    func write(_ id: ItemID, contents: [UInt8], history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError) {
        try replica.write(id, contents: contents, history: history, cache: cache)
    }

    func delete(_ id: ItemID, history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError) {
        try replica.delete(id, history: history, cache: cache)
    }

    func versionGenerations(of id: ItemID) throws(StoreError) -> [UInt64] {
        try replica.versionGenerations(of: id)
    }

    func version(of id: ItemID, generation: UInt64) throws(StoreError) -> (contents: [UInt8], place: String)? {
        try replica.version(of: id, generation: generation)
    }

    func purgeVersions(of id: ItemID) throws(StoreError) {
        try replica.purgeVersions(of: id)
    }

    func transactionEnded(_ cache: ReplicaCache) {
        // For this machine's next commands: the manifest its writes made is the cache's state, and their
        // first read or write need not read every item (`fleet.cached`). A long-lived process does not pay
        // the flush for it.
        guard !replica.watching else { return }
        replica.recordCacheState(cache)
    }

    func forgetCache() {
        replica.forget()
        state.withLock { $0.refreshedAt = nil }
    }

    /// Brings the cache up to date now (under the group's lock, which the caller holds); whether it
    /// changed.
    func refresh(_ cache: ReplicaCache, recording: Bool = false) throws(StoreError) -> Bool {
        let before = cache.changeCount
        let started = ContinuousClock.now
        // What changed since the state this machine verified, when that is all that needs reading; else
        // every item. Fresh reads only read every item's revision, and so every item.
        var stepped = false
        if !fleet.freshReadsOnly { stepped = try replica.stepForward(cache, recording: recording) }
        if !stepped { try replica.refresh(cache, recording: recording) }
        noteRefreshed(startedAt: started)
        return cache.changeCount > before
    }

    /// Runs `body`, which reads the group from etcd anew (a resync, a rotation), under the group's lock:
    /// what it read counts as a refresh that started when it did.
    func refreshing<R>(_ cache: ReplicaCache, _ body: (EtcdReplica) throws(StoreError) -> R) throws(StoreError) -> R {
        try cache.withGroupLock { () throws(StoreError) -> R in
            let started = ContinuousClock.now
            let result = try body(replica)
            noteRefreshed(startedAt: started)
            return result
        }
    }

    /// etcd confirmed the cache (a refresh or a resync that started at `started`: what it read is at
    /// least that old, so a thread that asked before then may take it for its own).
    func noteRefreshed(startedAt started: ContinuousClock.Instant) {
        state.withLock { $0.refreshedAt = started }
        noteConfirmed()
    }

    /// How the last read was answered, and why the watch is not running if the last one failed.
    func status() -> FleetCacheStatus? {
        guard var status = state.withLock({ $0.status }) else { return nil }
        status.watchFailure = replica.watchFailure()
        status.acceptedRollback = replica.seen.withLock { $0.acceptedRollback }
        return status
    }

    /// A read or write on the watch's word: etcd is in reach after all, so a status that still says
    /// stale (from before the watch came back) is corrected.
    private func noteVouched() {
        if state.withLock({ $0.status?.isStale == true }) { noteConfirmed() }
    }

    /// etcd confirmed the cache just now: the status says so, and reads ask etcd again.
    private func noteConfirmed() {
        let now = FileTimestampClock.now()
        state.withLock {
            $0.status = FleetCacheStatus(isStale: false, knownCurrentAt: now)
            $0.unreachableUntil = nil
        }
    }
}
