import FoundationEssentials
import VaultEtcd
import VaultStore

/// A refresh that reads what changed, not the whole group: from the manifest this process (or this
/// machine's last command, `fleet.cached`) verified to the one etcd holds now. Another machine's write
/// changes one node, one leaf and one item: those are read and checked (the new ones against the new
/// root, the old ones against the root of before, held in memory or read as etcd held them at its
/// revision), and the items whose entries changed are read, checked and cached. Anything else (a
/// rotation, a removal, a rollback report, a tree written whole, a compacted revision, a change too
/// large to step, anything that does not check) is left to the complete refresh, which says what is
/// wrong.
extension EtcdReplica {
    /// The smallest group a step serves (unless the head is given): below it a complete refresh reads
    /// about as much.
    static let stepMinimumItemCount = 128
    /// The most nodes, leaves and items a step reads: more is left to the complete refresh.
    static let stepMaximumChangedNodes = 32
    static let stepMaximumChangedLeaves = 64
    static let stepMaximumChangedItems = maximumOperations

    /// What a step starts from: the root's `mod_revision` and sealed digest (this machine's mark), the
    /// rollback report's revision then, and the manifest when this process holds it whole.
    private struct StepBasis {
        var revision: Int64
        var digest: [UInt8]
        var rollbackRevision: Int64
        var manifest: FleetManifest?
        /// From `fleet.cached`: its directory stamp, for the count of the cache's files.
        var directoryStamp: Int64
    }

    /// Brings the cache to etcd's state by what changed since the state this machine's mark holds;
    /// false when it cannot (nothing was changed): a complete refresh follows. With `recording`, as
    /// `refresh(_:recording:)`. `head`: the ranges of `headKeys`, in order, that a failed write's answer
    /// holds, taken for the head when this process holds the manifest of before.
    func stepForward(_ cache: ReplicaCache, recording: Bool, head given: EtcdTransactionResult? = nil)
        throws(StoreError) -> Bool
    {
        let started = ContinuousClock.now
        // With the head given, the step reads less than a complete refresh at any size. A small group
        // this process holds whole is refreshed completely before any file is read for the step.
        let minimumItemCount = given == nil ? Self.stepMinimumItemCount : 0
        if let count = seen.withLock({ $0.manifest?.itemCount }), count < minimumItemCount { return false }
        guard let previous = try cache.highWaterMark(), let basis = stepBasis(cache, mark: previous) else {
            return false
        }

        // The head as it is now, and the root of before when this process does not hold it.
        let headKeys = self.headKeys
        var operations: [EtcdOperation] = headKeys.map { .range(key: $0, rangeEnd: nil) }
        if basis.manifest == nil {
            operations.append(.range(key: manifestKey, rangeEnd: nil, revision: basis.revision))
        }
        let found: EtcdTransactionResult
        if let given, basis.manifest != nil, given.ranges.count == headKeys.count {
            found = given
        } else {
            guard let read = try stepRead(operations) else { return false }
            found = read
        }
        let revision = found.revision
        let head = Self.keyValues(named: headKeys, in: found.ranges)
        let contents = contents(of: head)
        // A root unchanged since the basis is its state, confirmed (a key changed under the prefix behind the
        // manifest's back is not read).
        guard contents.removed == nil, let rootValue = contents.manifest, rootValue.modRevision >= basis.revision,
            (contents.rollback?.modRevision ?? 0) == basis.rollbackRevision
        else { return false }
        if let keyring = contents.keyring {
            let generation = sealer.generation
            try adoptRotations(keyring.value, cache: cache)
            guard sealer.generation == generation else { return false }
        }
        guard case .root(let root) = try? sealer.open(rootValue.value) else { return false }
        let old: FleetManifestRoot
        if let manifest = basis.manifest {
            guard let tree = manifest.tree else { return false }
            old = FleetManifestRoot(counter: manifest.counter, itemCount: manifest.itemCount, tree: tree)
        } else {
            guard let oldValue = found.ranges[headKeys.count]?.keyValues.first(where: { $0.key == manifestKey }),
                oldValue.modRevision == basis.revision, try sealer.digest(of: oldValue.value) == basis.digest,
                case .root(let opened) = try? sealer.open(oldValue.value)
            else { return false }
            old = opened
        }
        guard old.itemCount >= minimumItemCount, root.epoch == old.epoch, root.counter >= old.counter,
            old.counter == previous.counter,
            try cacheHoldsCount(old.itemCount, cache: cache, stamp: basis.directoryStamp)
        else { return false }

        // The nodes that changed, each with its leaves; then the leaves that changed in them.
        let changedNodes = (0..<FleetManifestTree.nodeCount).filter { root.nodeDigests[$0] != old.nodeDigests[$0] }
        guard changedNodes.count <= Self.stepMaximumChangedNodes else { return false }
        let oldTree = basis.manifest?.tree
        guard
            let (new, before) = try readSubtrees(
                changedNodes, epoch: root.epoch, at: revision, basis: basis.revision,
                new: { root.nodeDigests[$0] != FleetManifestTree.emptyDigest },
                old: { oldTree == nil && old.nodeDigests[$0] != FleetManifestTree.emptyDigest })
        else { return false }
        let (newNodes, newLeaves, oldNodes, oldLeaves) = (new.nodes, new.leaves, before.nodes, before.leaves)
        var changedLeaves = Set<Int>()
        for node in changedNodes {
            let oldDigests: [UInt8]?
            if let oldTree {
                oldDigests = oldTree.nodes[node] ?? FleetManifestTree.emptyNode
            } else {
                oldDigests = try sealer.leafDigests(ofNode: node, bytes: oldNodes[node], listed: old.nodeDigests[node])
            }
            guard let oldDigests,
                let newDigests = try sealer.leafDigests(
                    ofNode: node, bytes: newNodes[node], listed: root.nodeDigests[node])
            else { return false }
            for leaf in FleetManifestTree.leaves(ofNode: node) {
                let range = FleetManifestTree.digestRange(ofLeaf: leaf)
                if newDigests[range] != oldDigests[range] { changedLeaves.insert(leaf) }
            }
        }
        guard changedLeaves.count <= Self.stepMaximumChangedLeaves else { return false }

        // The entries of those leaves, new and old, each checked against its root.
        guard
            let next = try? sealer.manifest(root, nodes: newNodes, leaves: newLeaves, loading: changedLeaves),
            let before = basis.manifest.map({ Self.entries(of: $0, in: changedLeaves) })
                ?? (try? sealer.manifest(old, nodes: oldNodes, leaves: oldLeaves, loading: changedLeaves))?.items,
            root.itemCount - next.items.count == old.itemCount - before.count
        else { return false }
        let changed = next.items.filter { before[$0.key] != $0.value }
        let removed = before.keys.filter { next.items[$0] == nil }
        guard changed.count + removed.count <= Self.stepMaximumChangedItems else { return false }

        // The items: each changed one with the bytes its entry lists, each removed one gone.
        let itemKeys = changed.keys.map(itemKey) + removed.map(itemKey)
        guard
            let read = try stepReading("its items", { () throws(EtcdError) in try readByName(itemKeys, at: revision) })
        else { return false }
        let items = Dictionary(read.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        var values: [(id: ItemID, keyValue: EtcdKeyValue)] = []
        for (id, entry) in changed {
            guard let keyValue = items[itemKey(id)], try sealer.digest(of: keyValue.value) == entry.digest else {
                return false
            }
            values.append((id, keyValue))
        }
        guard removed.allSatisfy({ items[itemKey($0)] == nil }) else { return false }
        // What this process sees next: the whole manifest when it held the one of before, else the root.
        var whole: FleetManifest?
        if let known = basis.manifest {
            guard let built = try? sealer.manifest(root, nodes: newNodes, leaves: newLeaves, known: known) else {
                return false
            }
            whole = built
        }

        let mark = FleetMark(counter: root.counter, digest: try sealer.digest(of: rootValue.value))
        let (_, acceptance) = try checkHistory(
            .root(root), mark: mark, previous: previous, contents: contents, cache: cache
        ) { (_) throws(StoreError) in next }
        // The mark first: a crash never leaves cached items newer than it.
        if previous != mark { try cache.record(mark) }
        for (id, keyValue) in values { try cache.store(keyValue.value, as: id) }
        for id in removed { try cache.remove(id) }
        seen.withLock { seen in
            if whole != nil {
                for id in removed { seen.revisions.removeValue(forKey: itemKey(id)) }
                for (id, keyValue) in values { seen.revisions[itemKey(id)] = keyValue.modRevision }
                seen.revisions[manifestKey] = rootValue.modRevision
                seen.itemsUnknown = false
            } else {
                seen.revisions = [manifestKey: rootValue.modRevision]
                seen.itemsUnknown = true
            }
            seen.manifest = whole
            seen.deferredTreeEpoch = whole == nil ? root.epoch : nil
            seen.manifestRevision = rootValue.modRevision
            seen.manifestDigest = mark.digest
            seen.rollbackRevision = contents.rollback?.modRevision ?? 0
            seen.confirmedRevision = max(seen.confirmedRevision, revision)
            seen.confirmedAt = started
            if let acceptance { seen.acceptedRollback = acceptance }
        }
        try finishRefresh(
            cache,
            reaching: FleetCacheRecord(
                manifestRevision: rootValue.modRevision, rollbackRevision: basis.rollbackRevision,
                markDigest: mark.digest),
            at: revision, recording: recording, acceptance: acceptance, machines: contents.machines)
        return true
    }

    /// What this machine verified last, whose state its cache holds: this process's manifest when the
    /// mark is still its own (no other process of this machine went further), else what `fleet.cached`
    /// records under the present mark.
    private func stepBasis(_ cache: ReplicaCache, mark: FleetMark) -> StepBasis? {
        let record = cache.currentRecord()
        let stamp = record.map { $0.markDigest == mark.digest ? $0.directoryStamp : 0 } ?? 0
        let own = seen.withLock { (seen) -> StepBasis? in
            guard let digest = seen.manifestDigest, digest == mark.digest, seen.manifestRevision > 0,
                seen.manifest.map({ $0.loadedLeaves == nil && $0.tree != nil }) ?? (seen.deferredTreeEpoch != nil)
            else { return nil }
            return StepBasis(
                revision: seen.manifestRevision, digest: digest, rollbackRevision: seen.rollbackRevision,
                manifest: seen.manifest,
                directoryStamp: record?.manifestRevision == seen.manifestRevision ? stamp : 0)
        }
        if let own { return own }
        guard let record, record.markDigest == mark.digest else { return nil }
        return StepBasis(
            revision: record.manifestRevision, digest: record.markDigest, rollbackRevision: record.rollbackRevision,
            manifest: nil, directoryStamp: record.directoryStamp)
    }

    /// What `read` (one of the step's reads of `what`) returns; nil when etcd compacted a revision it
    /// asks for, or an answer is larger than the client takes: the complete refresh reads at the present
    /// revision, in pages.
    private func stepReading<Value>(_ what: String, _ read: () throws(EtcdError) -> Value) throws(StoreError)
        -> Value?
    {
        do throws(EtcdError) {
            return try read()
        } catch  where error.grpcCode == EtcdClient.outOfRange || error.code == .responseTooLarge {
            return nil
        } catch {
            throw storeError(error, "cannot read \(what) from etcd")
        }
    }

    /// One read-only transaction of `operations`, as `stepReading` reads.
    private func stepRead(_ operations: [EtcdOperation]) throws(StoreError) -> EtcdTransactionResult? {
        guard
            let found = try stepReading(
                "its manifest", { () throws(EtcdError) in try client.transaction(compare: [], success: operations) })
        else { return nil }
        guard found.ranges.count == operations.count else {
            throw storeError(
                EtcdError(.malformedResponse, "etcd answered a read of the group's head without every range"),
                "cannot read its manifest from etcd")
        }
        return found
    }

    /// The keys under each of `nodes` (a node and its leaves, at most `treeKeyLimit`'s share) at
    /// `revision` where `new` says the node is stored, and at `basis` where `old` does, in one
    /// transaction; nil when etcd compacted `basis`, or a node holds more keys than a node and its
    /// leaves (strays: the complete refresh reads by name).
    private func readSubtrees(
        _ nodes: [Int], epoch: UInt64, at revision: Int64, basis: Int64, new: (Int) -> Bool, old: (Int) -> Bool
    ) throws(StoreError) -> (
        new: (nodes: [Int: [UInt8]], leaves: [Int: [UInt8]]), old: (nodes: [Int: [UInt8]], leaves: [Int: [UInt8]])
    )? {
        let wanted = nodes.filter(new).map { ($0, revision) } + nodes.filter(old).map { ($0, basis) }
        guard !wanted.isEmpty else { return (([:], [:]), ([:], [:])) }
        let limit = 1 + FleetManifestTree.leavesPerNode
        guard
            let found = try stepRead(
                wanted.map { node, at in
                    let key = nodeKey(node, epoch: epoch)
                    return .range(key: key, rangeEnd: EtcdClient.rangeEnd(ofPrefix: key), revision: at, limit: limit)
                })
        else { return nil }
        var newKeys: [EtcdKeyValue] = []
        var oldKeys: [EtcdKeyValue] = []
        for ((_, at), range) in zip(wanted, found.ranges) {
            guard let range, range.count <= Int64(limit) else { return nil }
            if at == revision { newKeys += range.keyValues } else { oldKeys += range.keyValues }
        }
        return (tree(in: newKeys, epoch: epoch), tree(in: oldKeys, epoch: epoch))
    }

    /// The entries of `manifest` whose ids are in `leaves`.
    private static func entries(of manifest: FleetManifest, in leaves: Set<Int>) -> [ItemID: FleetManifest.Entry] {
        var entries: [ItemID: FleetManifest.Entry] = [:]
        for ids in manifest.idsByLeaf(leaves).values {
            for id in ids { entries[id] = manifest.items[id] }
        }
        return entries
    }
}
