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

    /// The group's keys as of one revision: its items in pages, then its manifest's root and tree (or
    /// an earlier build's shards), reports, removal record, keyring and machines at that revision
    /// (`readHeadAndTree`). Other keys that something else put under the group's prefix are never
    /// read; more keys under `items/` than a group holds are refused.
    func readGroup() throws(StoreError) -> EtcdRangeResult {
        var attempt = 1
        while true {
            do throws(EtcdError) {
                let items = try client.range(
                    prefix: itemsPrefix, pageSize: Self.pageSize, maximumPageSize: Self.maximumPageSize,
                    maximumKeys: FleetManifest.maximumItemCount)
                let keyValues = try items.keyValues + readHeadAndTree(at: items.revision)
                return EtcdRangeResult(
                    revision: items.revision, keyValues: keyValues, count: Int64(keyValues.count),
                    clusterID: items.clusterID)
            } catch  where error.grpcCode == EtcdClient.outOfRange && attempt < 3 {
                attempt += 1  // compacted past the items' revision meanwhile: read again
            } catch {
                throw storeError(error, "cannot read its items from etcd")
            }
        }
    }

    /// The group's head keys by name and its tree at `revision`, in one read-only transaction with one
    /// range of `tree/` (`treeRangeRead`). When that range holds more keys than a tree has (another
    /// epoch's left by a writer that died, or strays), or more bytes than an answer may hold, the root's
    /// epoch is read alone (`readTree(epoch:at:)`); an earlier build's root is read with its shards.
    private func readHeadAndTree(at revision: Int64) throws(EtcdError) -> [EtcdKeyValue] {
        let names = headKeys
        var head: [EtcdKeyValue]
        var tree: [EtcdKeyValue]?
        do throws(EtcdError) {
            let found = try client.transaction(
                compare: [],
                success: names.map { .range(key: $0, rangeEnd: nil, revision: revision) }
                    + [treeRangeRead(revision: revision)])
            guard found.ranges.count == names.count + 1, let range = found.ranges[names.count] else {
                throw EtcdError(.malformedResponse, "etcd answered a read of the group's head without every range")
            }
            head = Self.keyValues(named: names, in: found.ranges)
            if range.count <= Int64(Self.treeKeyLimit) {
                tree = range.keyValues.filter { $0.key.starts(with: treePrefix) }
            }
        } catch  where error.code == .responseTooLarge {
            head = try readByName(names, at: revision)
        }
        // A root that does not open is refused by the refresh, which says why.
        guard let root = head.first(where: { $0.key == manifestKey }), let opened = try? sealer.open(root.value) else {
            return head + (tree ?? [])
        }
        switch opened {
        case .root(let root):
            if let tree { return head + tree }
            return try head + readTree(epoch: root.epoch, at: revision)
        case .sharded: return try head + readByName(shardKeys, at: revision)
        case .whole: return head
        }
    }

    /// The keys of the group's head: its manifest's root and its records, read by name.
    var headKeys: [[UInt8]] { [acceptedKey, keyringKey, machinesKey, manifestKey, removedKey, rollbackKey] }

    /// The group's head in one read of the keys from `manifest` to `rollback`: the manifest's root (nil:
    /// none), the `mod_revision` of the rollback report (0: none), and the store's revision. Every change
    /// of the group's state changes one of them.
    func readHead() throws(StoreError) -> (manifest: EtcdKeyValue?, rollbackRevision: Int64, revision: Int64) {
        let found: EtcdTransactionResult
        do {
            // One read-only transaction of the two keys by name: nothing else under the prefix is read.
            found = try client.transaction(
                compare: [],
                success: [.range(key: manifestKey, rangeEnd: nil), .range(key: rollbackKey, rangeEnd: nil)])
        } catch {
            throw storeError(error, "cannot read its manifest from etcd")
        }
        guard found.ranges.count == 2, let manifest = found.ranges[0], let rollback = found.ranges[1] else {
            throw storeError(
                EtcdError(.malformedResponse, "etcd answered a read of two keys without both"),
                "cannot read its manifest from etcd")
        }
        return (
            manifest.keyValues.first { $0.key == manifestKey },
            rollback.keyValues.first { $0.key == rollbackKey }?.modRevision ?? 0, found.revision
        )
    }

    /// Whether the cache is what etcd holds: with `checkingItems`, by every key's revision under the
    /// group's prefix (an item changed behind the manifest's back counts); else by the manifest's bytes
    /// (their digest: etcd reuses revisions after a restore) and the rollback report's revision.
    func isCurrent(checkingItems: Bool) throws(StoreError) -> Bool {
        guard !checkingItems else { return try everyRevisionIsCurrent() }
        let now = ContinuousClock.now
        let head = try readHead()
        guard let manifest = head.manifest else { return false }
        let digest = try sealer.digest(of: manifest.value)
        let same = seen.withLock { seen in
            guard seen.manifest != nil || seen.deferredTreeEpoch != nil, seen.manifestDigest == digest,
                seen.manifestRevision == manifest.modRevision,
                seen.rollbackRevision == head.rollbackRevision
            else { return false }
            seen.confirmedRevision = max(seen.confirmedRevision, head.revision)
            seen.confirmedAt = now
            return true
        }
        if same { watchIfNeeded(from: head.revision + 1) }
        return same
    }

    /// A process's first read or write of the group, in a process that does not watch: whether this
    /// machine's cache is the state etcd holds now, by what its last complete refresh (or write)
    /// recorded (`fleet.cached`, under the present mark): etcd's manifest root has those bytes and that
    /// revision, the rollback report that revision, and the cache holds as many items as the root counts
    /// (a cached file removed or left here since: a complete refresh, which puts it right; not counted
    /// while the group directory's modification time is the one recorded). Then the
    /// root is taken as seen without its tree, so that the cost does not grow with the group: a write
    /// reads its item's node, leaf and revision when it needs them (`writeBasis(item:leaf:)`). An
    /// earlier build's manifest is read completely (its first write here puts a tree).
    func adoptCacheIfCurrent(_ cache: ReplicaCache) throws(StoreError) -> Bool {
        guard let record = cache.currentRecord(), let mark = try? cache.highWaterMark(),
            mark.digest == record.markDigest
        else { return false }
        let now = ContinuousClock.now
        let head = try readHead()
        guard let manifestValue = head.manifest, manifestValue.modRevision == record.manifestRevision,
            head.rollbackRevision == record.rollbackRevision,
            try sealer.digest(of: manifestValue.value) == mark.digest
        else { return false }
        guard case .root(let root) = try sealer.open(manifestValue.value) else { return false }
        guard try cacheHoldsCount(root.itemCount, cache: cache, stamp: record.directoryStamp) else { return false }
        seen.withLock { seen in
            seen.revisions = [manifestKey: manifestValue.modRevision]
            seen.itemsUnknown = true
            seen.manifest = nil
            seen.deferredTreeEpoch = root.epoch
            seen.manifestRevision = manifestValue.modRevision
            seen.manifestDigest = mark.digest
            seen.rollbackRevision = head.rollbackRevision
            seen.confirmedRevision = max(seen.confirmedRevision, head.revision)
            seen.confirmedAt = now
        }
        return true
    }

    /// Whether the cache holds `count` item files: none added or removed since `stamp` (the group
    /// directory's modification time then; 0: unknown), else counted (the kernel's listing of every item
    /// file).
    func cacheHoldsCount(_ count: Int, cache: ReplicaCache, stamp: Int64) throws(StoreError) -> Bool {
        if stamp != 0, cache.directoryModificationTime() == stamp { return true }
        return try cache.cachedIDs().count == count
    }

    /// Records the state this process last saw (a complete refresh, an adopted cache, its own writes) as
    /// the cache's, for this machine's next processes; best effort (a record not written costs them a
    /// complete refresh).
    func recordCacheState(_ cache: ReplicaCache) {
        let record = seen.withLock { (seen) -> FleetCacheRecord? in
            guard seen.manifest != nil || seen.deferredTreeEpoch != nil, let digest = seen.manifestDigest,
                seen.manifestRevision > 0
            else { return nil }
            return FleetCacheRecord(
                manifestRevision: seen.manifestRevision, rollbackRevision: seen.rollbackRevision, markDigest: digest)
        }
        guard let record, (try? cache.highWaterMark())??.digest == record.markDigest else { return }
        try? cache.recordCurrent(record)
    }

    /// The `mod_revision` of `key` in etcd, nil when it does not exist.
    func revision(of key: [UInt8]) throws(StoreError) -> Int64? {
        do {
            return try client.range(key, keysOnly: true).keyValues.first?.modRevision
        } catch {
            throw storeError(error, "cannot read an item's revision from etcd")
        }
    }

    private func everyRevisionIsCurrent() throws(StoreError) -> Bool {
        // The second counts from before the request: what the answer confirms is at least that old.
        let now = ContinuousClock.now
        let found: EtcdRangeResult
        do {
            found = try client.range(prefix: itemsPrefix, keysOnly: true)
        } catch {
            throw storeError(error, "cannot read its items' revisions from etcd")
        }
        let head = try readHead()
        var current = Self.revisions(found)
        if let manifest = head.manifest { current[manifestKey] = manifest.modRevision }
        if head.rollbackRevision > 0 { current[rollbackKey] = head.rollbackRevision }
        let revision = min(found.revision, head.revision)
        let same = seen.withLock { seen in
            guard seen.revisions == current, seen.manifest != nil else { return false }
            seen.confirmedRevision = max(seen.confirmedRevision, revision)
            seen.confirmedAt = now
            return true
        }
        if same { watchIfNeeded(from: revision + 1) }
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
