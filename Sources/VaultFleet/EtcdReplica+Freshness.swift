import FoundationEssentials
import VaultEtcd
import VaultStore
import VaultSystem

/// Whether a fleet group's cache is current: the watch that vouches for it, and the check that asks etcd.
extension EtcdReplica {
    func isKnownCurrent() -> Bool {
        guard watching else { return false }
        let now = ContinuousClock.now
        let process = ProcessIdentity.processID
        return seen.withLock { seen in
            guard seen.watch != nil, seen.watchLive, seen.watchProcess == process,
                seen.newestChange <= seen.confirmedRevision, let confirmedAt = seen.confirmedAt
            else { return false }
            return now - confirmedAt < .seconds(1)
        }
    }

    /// The `mod_revision`s of the group's manifest and rollback report (0: none) and the store's
    /// revision, in one keys-only read of the keys from `manifest` to `rollback`: every change of the
    /// group's state changes one of them.
    func headRevisions() throws(StoreError) -> (manifest: Int64, rollback: Int64, revision: Int64) {
        let found: EtcdRangeResult
        do {
            found = try client.range(manifestKey, rangeEnd: rollbackKey + [0], keysOnly: true)
        } catch {
            throw storeError(error, "cannot read its manifest's revision from etcd")
        }
        let revisions = Self.revisions(found)
        return (revisions[manifestKey] ?? 0, revisions[rollbackKey] ?? 0, found.revision)
    }

    /// Whether the cache is what etcd holds: with `checkingItems`, by every key's revision under the
    /// group's prefix (an item changed behind the manifest's back counts); else by the manifest's and
    /// the rollback report's alone.
    func isCurrent(checkingItems: Bool) throws(StoreError) -> Bool {
        guard !checkingItems else { return try everyRevisionIsCurrent() }
        let now = ContinuousClock.now
        let head = try headRevisions()
        let same = seen.withLock { seen in
            guard seen.manifestRevision != 0, seen.manifestRevision == head.manifest,
                seen.rollbackRevision == head.rollback
            else { return false }
            seen.confirmedRevision = max(seen.confirmedRevision, head.revision)
            seen.confirmedAt = now
            return true
        }
        if same { watchIfNeeded(from: head.revision + 1) }
        return same
    }

    /// A process's first read: whether this machine's cache is the state etcd holds now, by the
    /// revisions its last complete refresh recorded (`fleet.cached`, made under the present mark).
    func cacheIsCurrent(_ cache: ReplicaCache) throws(StoreError) -> Bool {
        guard let record = cache.currentRecord(), let mark = try? cache.highWaterMark(),
            mark.digest == record.markDigest
        else { return false }
        let now = ContinuousClock.now
        let head = try headRevisions()
        guard head.manifest == record.manifestRevision, head.rollback == record.rollbackRevision else { return false }
        seen.withLock { seen in
            seen.manifestRevision = head.manifest
            seen.rollbackRevision = head.rollback
            seen.confirmedRevision = max(seen.confirmedRevision, head.revision)
            seen.confirmedAt = now
        }
        return true
    }

    private func everyRevisionIsCurrent() throws(StoreError) -> Bool {
        // The second counts from before the request: what the answer confirms is at least that old.
        let now = ContinuousClock.now
        let found: EtcdRangeResult
        do {
            found = try client.range(prefix: rootPrefix, keysOnly: true)
        } catch {
            throw storeError(error, "cannot read its items' revisions from etcd")
        }
        let current = Self.revisions(found)
        let same = seen.withLock { seen in
            guard seen.revisions == current, seen.manifest != nil else { return false }
            seen.confirmedRevision = max(seen.confirmedRevision, found.revision)
            seen.confirmedAt = now
            return true
        }
        if same { watchIfNeeded(from: found.revision + 1) }
        return same
    }

    static func revisions(_ found: EtcdRangeResult) -> [[UInt8]: Int64] {
        found.keyValues.reduce(into: [:]) { $0[$1.key] = $1.modRevision }
    }

    /// Starts a watch of the group's prefix from `revision` when none runs in this process, and the
    /// last one did not fail too recently.
    func watchIfNeeded(from revision: Int64) {
        guard watching else { return }
        let process = ProcessIdentity.processID
        let now = ContinuousClock.now
        seen.withLock { seen in
            if seen.watch != nil, seen.watchProcess == process { return }
            if seen.watchProcess == process, let retryAt = seen.watchRetryAt, now < retryAt { return }
            if seen.watchProcess != process {
                // A forked child: its parent's failures are not its own.
                seen.watchFailures = 0
                seen.watchRetryAt = nil
                seen.watchEnd = nil
                seen.watchLiveSince = nil
            }
            seen.watchProcess = process
            seen.watchLive = false
            seen.watch = EtcdWatch(
                client: client, prefix: rootPrefix, fromRevision: revision,
                onStart: { [weak self] in
                    let now = ContinuousClock.now
                    self?.seen.withLock {
                        guard $0.watchProcess == process else { return }
                        $0.watchLive = true
                        $0.watchLiveSince = now
                    }
                },
                onEvents: { [weak self] (events, _) in
                    let newest =
                        events.map { (event) -> Int64 in
                            switch event {
                            case .put(let keyValue): return keyValue.modRevision
                            case .delete(_, let modRevision): return modRevision
                            }
                        }.max() ?? 0
                    self?.seen.withLock { $0.newestChange = max($0.newestChange, newest) }
                },
                onEnd: { [weak self] end in
                    // Ended (compacted, a member gone, refused, cancelled): reads check etcd until a check
                    // starts another, from then on; after a failure not at once, so that a watch that
                    // etcd refuses, or that something between drops soon after etcd made it, is not made
                    // again by every read.
                    let now = ContinuousClock.now
                    self?.seen.withLock {
                        guard $0.watchProcess == process else { return }
                        $0.watch = nil
                        $0.watchLive = false
                        $0.watchEnd = end
                        if case .failed = end {
                            if let since = $0.watchLiveSince, now - since >= Self.watchRetryDelay(afterFailures: .max) {
                                $0.watchFailures = 0
                            }
                            $0.watchFailures += 1
                            $0.watchRetryAt = now + Self.watchRetryDelay(afterFailures: $0.watchFailures)
                        }
                        $0.watchLiveSince = nil
                    }
                })
        }
    }

    /// How long after the `failures`-th failed watch in a row the next may start: 1 s, doubling, at
    /// most 32 s.
    static func watchRetryDelay(afterFailures failures: Int) -> Duration {
        .seconds(1 << min(max(failures - 1, 0), 5))
    }

    func watchFailure() -> String? {
        let process = ProcessIdentity.processID
        return seen.withLock { seen in
            // Until etcd has made the next watch, the last one's failure still stands.
            guard !seen.watchLive, seen.watchProcess == process, case .failed(let reason) = seen.watchEnd else {
                return nil
            }
            return reason
        }
    }
}
