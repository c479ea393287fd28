import VaultEtcd
import VaultStore
import VaultSystem

/// Removing a fleet group from the fleet: every key of it in etcd (items, versions, manifest,
/// registration, reports) goes in one transaction, and a sealed `removed` record takes their place,
/// so that the other machines say who removed it and when rather than "not found".
extension EtcdReplica {
    /// Removes the group from etcd; the number of items it held there. Compared on the manifest's
    /// revision: a write of another machine meanwhile makes it read again (three times at most).
    func removeFromEtcd(_ cache: ReplicaCache) throws(StoreError) -> Int {
        for _ in 0..<3 {
            let contents = contents(try readGroup())
            if let removed = contents.removed {
                throw try removal(removed.value, groupKeysRemain: contents.manifest != nil)
            }
            if let keyring = contents.keyring { try adoptRotations(keyring.value, cache: cache) }
            let counter = try contents.manifest.map { (keyValue) throws(StoreError) in
                try sealer.open(keyValue.value).counter
            }
            let record = try sealer.seal(
                FleetWitness(
                    kind: .removed, seenCounter: counter ?? 0,
                    seenDigest: [UInt8](repeating: 0, count: FleetManifest.digestByteCount), replicaCounter: 0,
                    newCounter: 0, userID: ProcessIdentity.effectiveUserID, time: FileTimestampClock.now()))
            let result: EtcdTransactionResult
            do {
                // etcd refuses a put inside a deleted range of the same transaction: the record's key is left
                // out of the two deletions of the group's prefix.
                result = try client.transaction(
                    compare: [
                        contents.manifest.map { .modRevision(key: manifestKey, equals: $0.modRevision) }
                            ?? .createRevision(key: manifestKey, equals: 0)
                    ],
                    success: [
                        .delete(key: rootPrefix, rangeEnd: removedKey),
                        .delete(key: removedKey + [0], rangeEnd: EtcdClient.rangeEnd(ofPrefix: rootPrefix)),
                        .delete(key: versionsPrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: versionsPrefix)),
                        .put(key: removedKey, value: record),
                    ])
            } catch {
                throw storeError(error, "cannot remove it from etcd")
            }
            if result.succeeded {
                forget()
                return contents.items.count
            }
        }
        throw StoreError(
            .conflict, "fleet group \(group) kept changing in etcd while it was being removed; nothing was removed")
    }

    /// The refusal of a group that `record` says was removed from the fleet.
    func removal(_ record: [UInt8], groupKeysRemain: Bool) throws(StoreError) -> StoreError {
        let removed: FleetWitness
        do {
            removed = try sealer.open(record, as: .removed)
        } catch {
            // A removal leaves no other key of the group: a record beside them is no removal of the vault's.
            if groupKeysRemain { throw error }
            // Sealed under a generation of the group's key that this machine never took (rotated since it
            // last read), or not a record of the group's at all.
            return StoreError(
                .groupNotFound,
                "fleet group \(group) was removed from the fleet (etcd included), by a record this machine cannot "
                    + "open (sealed under a later generation of the group's key, or replaced): `vault group rm "
                    + "\(group) --force` removes this machine's copy", cause: error)
        }
        return StoreError(
            .groupNotFound,
            "fleet group \(group) was removed from the fleet (etcd included) by uid \(removed.userID) at "
                + "\(UTCTimestamp.iso8601(nanosecondsSince1970: removed.time)): `vault group rm \(group) --force` "
                + "removes this machine's copy")
    }
}
