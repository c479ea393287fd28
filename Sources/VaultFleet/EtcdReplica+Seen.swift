import VaultEtcd
import VaultStore

/// What this process saw of the group (`Seen`): what a write makes the next manifest from and compares
/// on, and what a write that etcd took leaves.
extension EtcdReplica {
    /// What a write compares on and makes the next manifest from.
    struct WriteBasis {
        /// The manifest seen (with the write's leaf at least), its `mod_revision`, the item's
        /// (nil: absent) and the rollback report's (0: none).
        var manifest: FleetManifest?
        var manifestRevision: Int64
        var itemRevision: Int64?
        var rollbackRevision: Int64
    }

    /// What a write of item key `item` (in leaf `leaf`) compares on, read under one lock. When this
    /// process took the cache as current by the root alone (`adoptCacheIfCurrent`), the root, the leaf,
    /// its node and the item's revision are read now in one read-only transaction: a root other than the
    /// one seen is a conflict (the rerun refreshes), and the compare on it holds the write to the state
    /// this machine verified.
    func writeBasis(item: [UInt8], leaf: Int) throws(StoreError) -> WriteBasis {
        let (basis, epoch, digest, itemsUnknown) = seen.withLock {
            (
                WriteBasis(
                    manifest: $0.manifest, manifestRevision: $0.manifestRevision, itemRevision: $0.revisions[item],
                    rollbackRevision: $0.rollbackRevision),
                $0.deferredTreeEpoch, $0.manifestDigest, $0.itemsUnknown
            )
        }
        let readItem = itemsUnknown && basis.itemRevision == nil
        guard basis.manifest == nil, let epoch, let digest else {
            guard readItem else { return basis }
            var read = basis
            read.itemRevision = try revision(of: item)
            return read
        }
        let node = FleetManifestTree.node(ofLeaf: leaf)
        let (nodeKey, leafKey) = (nodeKey(node, epoch: epoch), leafKey(leaf, epoch: epoch))
        let found: EtcdTransactionResult
        do {
            found = try client.transaction(
                compare: [],
                success: [
                    .range(key: manifestKey, rangeEnd: nil), .range(key: nodeKey, rangeEnd: nil),
                    .range(key: leafKey, rangeEnd: nil), .range(key: item, rangeEnd: nil, keysOnly: true),
                ])
        } catch {
            throw storeError(error, "cannot read its manifest from etcd")
        }
        guard found.ranges.count == 4, let rootValue = found.ranges[0]?.keyValues.first,
            rootValue.modRevision == basis.manifestRevision, try sealer.digest(of: rootValue.value) == digest,
            case .root(let root) = try sealer.open(rootValue.value), root.epoch == epoch
        else {
            forget()
            throw StoreError(.conflict, "fleet group \(group): it changed on another machine meanwhile")
        }
        func value(_ index: Int, _ key: [UInt8]) -> [UInt8]? {
            found.ranges[index]?.keyValues.first { $0.key == key }?.value
        }
        var read = basis
        read.manifest = try sealer.manifest(
            root, nodes: value(1, nodeKey).map { [node: $0] } ?? [:],
            leaves: value(2, leafKey).map { [leaf: $0] } ?? [:],
            loading: [leaf])
        if readItem { read.itemRevision = found.ranges[3]?.keyValues.first { $0.key == item }?.modRevision }
        return read
    }

    /// After a write that etcd took: raises this machine's mark to manifest `next`, sealed as `sealed`,
    /// and returns that digest. A failure is the write's local half failing: the next read refreshes.
    func recordMark(of next: FleetManifest, sealed: [UInt8], cache: ReplicaCache) throws(StoreError) -> [UInt8] {
        let digest = try sealer.digest(of: sealed)
        do throws(StoreError) {
            try cache.record(FleetMark(counter: next.counter, digest: digest))
        } catch {
            forget()
            throw StoreError.afterReplicaCommit(error, group: group, replica: "etcd")
        }
        return digest
    }

    /// This process's write of manifest `next` (digest `digest`) at `revision`, over the one it saw at
    /// `manifestRevision`, with the item keys `put` put and `deleted` deleted.
    func noteCommitted(
        _ next: FleetManifest, digest: [UInt8], at revision: Int64, over manifestRevision: Int64, put: [[UInt8]] = [],
        deleted: [UInt8]? = nil
    ) {
        seen.withLock { seen in
            if let deleted { seen.revisions.removeValue(forKey: deleted) }
            for item in put { seen.revisions[item] = revision }
            seen.revisions[manifestKey] = revision
            // A manifest of one leaf read for the write stays out: the next write reads its own again.
            seen.manifest = next.loadedLeaves == nil ? next : nil
            seen.deferredTreeEpoch = next.loadedLeaves == nil ? nil : next.tree?.epoch
            seen.manifestRevision = revision
            seen.manifestDigest = digest
            // The compare held: nothing changed the group between what this process saw and this write,
            // so its state at `revision` is known (the watch's report of this write is no news).
            if seen.confirmedRevision >= manifestRevision {
                seen.confirmedRevision = max(seen.confirmedRevision, revision)
            }
        }
    }

    /// The manifest the last refresh (or this process's last write) saw.
    var seenManifest: FleetManifest? { seen.withLock { $0.manifest } }

    /// What this process saw is no longer taken for current, but kept: the next use checks etcd, and a
    /// refresh steps from it (`stepForward`).
    func unconfirm() {
        seen.withLock { $0.confirmedAt = nil }
    }

    func forget() {
        seen.withLock { seen in
            seen.revisions = [:]
            seen.itemsUnknown = false
            seen.manifest = nil
            seen.deferredTreeEpoch = nil
            seen.manifestRevision = 0
            seen.manifestDigest = nil
            seen.rollbackRevision = 0
            seen.confirmedAt = nil
        }
    }
}
