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

    func isCurrent() throws(StoreError) -> Bool {
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
