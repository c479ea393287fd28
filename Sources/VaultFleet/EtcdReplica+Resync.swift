import Vault
import VaultEtcd
import VaultStore
import VaultSystem

/// The resynchronisation of a fleet group with etcd, and the operator's acceptance of a rollback.
extension EtcdReplica {
    func resync(_ cache: ReplicaCache, acceptingRollback: Bool) throws(StoreError) -> FleetResync {
        forget()
        // An operator's acceptance also gets past a mark that does not parse: it is written anew.
        let previous = acceptingRollback ? ((try? cache.highWaterMark()) ?? nil) : try cache.highWaterMark()
        guard acceptingRollback else {
            try refresh(cache)
            let now = seenManifest
            return FleetResync(
                previousCounter: previous?.counter, replicaCounter: now?.counter, counter: now?.counter ?? 0,
                itemCount: now?.items.count ?? 0, removedCount: 0)
        }
        let found = try readGroup()
        let contents = contents(found)
        // The group's current key first: what does not open under it is removed below.
        if let keyring = contents.keyring { try adoptRotations(keyring.value, cache: cache) }
        let (manifestValue, items) = (contents.manifest, contents.items)
        let replicaManifest = manifestValue.flatMap { try? sealer.open($0.value) }
        // Above what any machine reported seeing too, so that each takes the new state as newer.
        let reported = contents.rollback.flatMap { try? sealer.open($0.value, as: .rollback) }
        let seen = max(previous?.counter ?? 0, reported?.refusedThrough ?? 0)
        var next = FleetManifest(counter: max(seen, replicaManifest?.counter ?? 0) + 1, items: [:])
        var removals: [EtcdOperation] = []
        for (id, keyValue) in items {
            if try cache.opens(keyValue.value, as: id) {
                next.items[id] = FleetManifest.Entry(
                    digest: try sealer.digest(of: keyValue.value), version: next.counter)
            } else {
                removals.append(.delete(key: keyValue.key, rangeEnd: nil))
            }
        }
        // The root, the accepted record, the report's deletion and the other epochs' and shards'.
        let removable = Self.maximumOperations - 6
        guard removals.count <= removable else {
            throw StoreError(
                .integrity,
                "fleet group \(group): \(removals.count) items in etcd do not open under the group's key, and a resync "
                    + "removes at most \(removable); remove them with etcdctl (keys under "
                    + "\(String(decoding: itemsPrefix, as: UTF8.self))) first; nothing was changed")
        }
        // Every machine that takes the new manifest says that a rollback was accepted, and by whom.
        let acceptance = try sealer.seal(
            FleetWitness(
                kind: .accepted, seenCounter: seen,
                seenDigest: [UInt8](repeating: 0, count: FleetManifest.digestByteCount),
                replicaCounter: replicaManifest?.counter ?? 0,
                newCounter: next.counter, userID: ProcessIdentity.effectiveUserID, time: FileTimestampClock.now()))
        // A whole tree under a new epoch, put before the root that names it.
        let (sealed, tree) = try sealer.seal(&next, over: nil)
        let treeWrites = try treeOperations(tree)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [
                    manifestValue.map { .modRevision(key: manifestKey, equals: $0.modRevision) }
                        ?? .createRevision(key: manifestKey, equals: 0),
                    // A report made since was not counted above: the resync runs again.
                    .modRevision(key: rollbackKey, equals: contents.rollback?.modRevision ?? 0),
                ],
                success: [
                    .put(key: manifestKey, value: sealed), .put(key: acceptedKey, value: acceptance),
                    .delete(key: rollbackKey, rangeEnd: nil),
                ] + treeWrites + removals,
                failure: [.range(key: manifestKey, rangeEnd: nil)])
        } catch {
            throw storeError(error, "cannot write the group's manifest to etcd")
        }
        guard result.succeeded else {
            discardTree(tree, current: result.ranges.first??.keyValues.first?.value)
            throw StoreError(
                .conflict, "fleet group \(group) changed in etcd during the resync; nothing was changed: run it again")
        }
        try cache.record(FleetMark(counter: next.counter, digest: try sealer.digest(of: sealed)))
        try refresh(cache)
        return FleetResync(
            previousCounter: previous?.counter, replicaCounter: replicaManifest?.counter, counter: next.counter,
            itemCount: next.items.count, removedCount: removals.count)
    }
}
