import VaultEtcd
import VaultStore

/// A refresh that is a plain step forward from what this process saw: the manifest's root, then only
/// the shards and items that changed. Anything else (a rotation, a rollback report, an accepted
/// rollback, a removal, an item changed at a counter this machine's mark covers) is left to a complete
/// refresh, which refuses what must be refused.
extension EtcdReplica {
    /// Brings the cache up to date by a step forward (`catchUp`) when this process saw a whole manifest,
    /// no rollback report or removal is in etcd, and no rollback was accepted since; false when it did
    /// not (the caller refreshes completely). With `recording`, records the state for this machine's
    /// next processes (`FleetCacheRecord`).
    func refreshByCatchingUp(_ cache: ReplicaCache, recording: Bool) throws(StoreError) -> Bool {
        let (seenManifest, seenRevision, seenReport, lastHead) = seen.withLock { seen in
            defer { seen.lastHead = nil }
            return (seen.manifest, seen.manifestRevision, seen.rollbackRevision, seen.lastHead)
        }
        guard seenManifest != nil, seenReport == 0 else { return false }
        // The check that found the cache stale has just read the head: no second read.
        let head: GroupHead
        if let lastHead {
            head = lastHead
        } else {
            head = try readHead()
            seen.withLock { $0.lastHead = nil }
        }
        guard let root = head.manifest, head.rollbackRevision == 0, !head.removed,
            head.acceptedRevision <= seenRevision,
            try catchUp(to: root, at: head.revision, cache)
        else { return false }
        seen.withLock { seen in
            seen.confirmedRevision = max(seen.confirmedRevision, head.revision)
            seen.confirmedAt = head.readAt
        }
        if recording {
            try cache.recordCurrent(
                FleetCacheRecord(
                    manifestRevision: root.modRevision, rollbackRevision: 0,
                    markDigest: try sealer.digest(of: root.value)))
        }
        watchIfNeeded(from: head.revision + 1)
        return true
    }

    /// Brings the cache and what this process saw to etcd's manifest (`manifestValue`, read at
    /// `revision`), a plain step forward from the one seen, reading only the shards and items it
    /// changed. False when it is not one (not above this machine's mark, an item changed at a counter
    /// the mark covers, an item that does not match): a complete refresh then refuses what must be
    /// refused.
    func catchUp(to manifestValue: EtcdKeyValue, at revision: Int64, _ cache: ReplicaCache)
        throws(StoreError) -> Bool
    {
        guard let seenManifest = seen.withLock({ $0.manifest }), let previous = try cache.highWaterMark() else {
            return false
        }
        // One that does not open under this key (another machine rotated meanwhile): a complete refresh.
        guard let manifest = try? self.manifest(manifestValue.value, at: revision, over: seenManifest),
            manifest.counter > previous.counter
        else {
            return false
        }
        var changed: [ItemID] = []
        for (id, entry) in manifest.items where seenManifest.items[id] != entry {
            guard entry.version > previous.counter else { return false }
            changed.append(id)
        }
        // A cache that is not the one seen (a file removed or left here since, or another process of
        // this machine moved it on): a complete refresh, which tells the two apart.
        guard try cache.cachedIDs().count == seenManifest.items.count else { return false }
        let removed = seenManifest.items.keys.filter { manifest.items[$0] == nil }
        var values: [(id: ItemID, value: EtcdKeyValue)] = []
        var start = 0
        while start < changed.count {
            let chunk = changed[start..<min(start + Self.resealBatchCount, changed.count)]
            start += chunk.count
            let found: EtcdTransactionResult
            do {
                found = try client.transaction(
                    compare: [], success: chunk.map { .range(key: itemKey($0), rangeEnd: nil, revision: revision) })
            } catch {
                throw storeError(error, "cannot read its items from etcd")
            }
            for (id, range) in zip(chunk, found.ranges) {
                guard let value = range?.keyValues.first,
                    try sealer.digest(of: value.value) == manifest.items[id]?.digest
                else { return false }
                values.append((id, value))
            }
        }
        let digest = try sealer.digest(of: manifestValue.value)
        try cache.record(FleetMark(counter: manifest.counter, digest: digest))
        for item in values { try cache.store(item.value.value, as: item.id) }
        for id in removed { try cache.remove(id) }
        seen.withLock { seen in
            for item in values { seen.revisions[itemKey(item.id)] = item.value.modRevision }
            for id in removed { seen.revisions.removeValue(forKey: itemKey(id)) }
            seen.revisions[manifestKey] = manifestValue.modRevision
            seen.manifest = manifest
            seen.shardsDeferred = false
            seen.manifestRevision = manifestValue.modRevision
            seen.manifestDigest = digest
        }
        return true
    }

    /// The manifest that the sealed root `sealed` (read at `revision`) makes, with the shards whose
    /// digests differ from `seen`'s read at that revision and the others taken from `seen`; nil when
    /// they cannot be read.
    private func manifest(_ sealed: [UInt8], at revision: Int64, over seen: FleetManifest) throws(StoreError)
        -> FleetManifest?
    {
        let root: FleetManifestRoot
        switch try sealer.open(sealed) {
        case .whole(let whole): return whole
        case .root(let opened): root = opened
        }
        guard let seenDigests = seen.shardDigests else {
            // Seen in one key: every shard is read.
            guard let shards = readShards(Set(0..<FleetManifest.shardCount), at: revision) else { return nil }
            return try sealer.manifest(root, shards: shards)
        }
        let changed = Set((0..<FleetManifest.shardCount).filter { root.shardDigests[$0] != seenDigests[$0] })
        guard var shards = readShards(changed, at: revision) else { return nil }
        shards.merge(seen.shardEncodings(Set(0..<FleetManifest.shardCount).subtracting(changed))) { read, _ in read }
        return try sealer.manifest(root, shards: shards)
    }

    /// Shards `indices` as etcd held them at `revision` (an absent shard is absent here too); nil when
    /// they cannot be read (compacted past it, or etcd out of reach: a complete refresh says which).
    private func readShards(_ indices: Set<Int>, at revision: Int64) -> [Int: [UInt8]]? {
        guard !indices.isEmpty else { return [:] }
        let reads = shardReads(indices.sorted(), revision: revision)
        guard let found = try? client.transaction(compare: [], success: reads) else { return nil }
        return shards(in: found.ranges.compactMap { $0?.keyValues.first })
    }
}

/// A fleet group's head as one read-only transaction found it: the manifest's root (nil: none), the
/// `mod_revision` of the rollback report and of the accepted-rollback record (0: none), whether a
/// removal record is there, the store's revision, and when the read started (this process's clock).
struct GroupHead: Sendable {
    var manifest: EtcdKeyValue?
    var rollbackRevision: Int64
    var acceptedRevision: Int64
    var removed: Bool
    var revision: Int64
    var readAt: ContinuousClock.Instant
}
