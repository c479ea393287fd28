import Vault
import VaultEtcd
import VaultStore

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
        let (manifestValue, items) = contents(found)
        let replicaManifest = manifestValue.flatMap { try? identity.manifestKey.open($0.value) }
        var next = FleetManifest(
            counter: max(previous?.counter ?? 0, replicaManifest?.counter ?? 0) + 1, items: [:])
        var removals: [EtcdOperation] = []
        for (id, keyValue) in items {
            if try cache.opens(keyValue.value, as: id) {
                next.items[id] = FleetManifest.Entry(
                    digest: try identity.manifestKey.digest(of: keyValue.value), version: next.counter)
            } else {
                removals.append(.delete(key: keyValue.key, rangeEnd: nil))
            }
        }
        // etcd allows 128 operations in a transaction (`--max-txn-ops`).
        guard removals.count < 100 else {
            throw StoreError(
                .integrity,
                "fleet group \(group): \(removals.count) items in etcd do not open under the group's key; remove "
                    + "them with etcdctl (keys under \(String(decoding: itemsPrefix, as: UTF8.self))) first; nothing "
                    + "was changed")
        }
        let sealed = try identity.manifestKey.seal(next)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [
                    manifestValue.map { .modRevision(key: manifestKey, equals: $0.modRevision) }
                        ?? .createRevision(key: manifestKey, equals: 0)
                ],
                success: [.put(key: manifestKey, value: sealed)] + removals)
        } catch {
            throw storeError(error, "cannot write the group's manifest to etcd")
        }
        guard result.succeeded else {
            throw StoreError(
                .conflict, "fleet group \(group) changed in etcd during the resync; nothing was changed: run it again")
        }
        try cache.record(FleetMark(counter: next.counter, digest: try identity.manifestKey.digest(of: sealed)))
        try refresh(cache)
        return FleetResync(
            previousCounter: previous?.counter, replicaCounter: replicaManifest?.counter, counter: next.counter,
            itemCount: next.items.count, removedCount: removals.count)
    }
}
