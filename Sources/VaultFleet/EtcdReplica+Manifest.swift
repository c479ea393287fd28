import VaultEtcd
import VaultStore

/// Where etcd holds a fleet group's manifest: its root under `manifest`, and its shards under
/// `shards/<index, two hex digits>`, each written by name and read by name or in one range of their
/// names (a key that something else put under `shards/` is never taken for a shard).
extension EtcdReplica {
    /// The key of every shard, by index.
    static func shardKeys(under root: String) -> [[UInt8]] {
        (0..<FleetManifest.shardCount).map { index in
            let digits = String(index, radix: 16)
            return Array((root + "shards/" + (digits.count < 2 ? "0" : "") + digits).utf8)
        }
    }

    /// Reads of the keys of shards `indices`, at `revision` (0: the newest).
    func shardReads(_ indices: [Int], revision: Int64 = 0) -> [EtcdOperation] {
        indices.map { .range(key: shardKeys[$0], rangeEnd: nil, revision: revision) }
    }

    /// One read of the range from the first shard's name to the last's, at `revision`, of as many keys
    /// as there are shards: one operation where 64 reads by name cost etcd far more. Absent shards are
    /// not in it; a key that something else put between two shards' names is, and `shards(in:)` leaves
    /// it out. When the range holds more keys than there are shards (its `count`), or its answer is too
    /// large, read them by name.
    func shardRangeRead(revision: Int64) -> EtcdOperation {
        .range(
            key: shardKeys[0], rangeEnd: shardKeys[shardKeys.count - 1] + [0], revision: revision,
            limit: FleetManifest.shardCount)
    }

    /// The shards among `keyValues`, by index.
    func shards(in keyValues: [EtcdKeyValue]) -> [Int: [UInt8]] {
        var shards: [Int: [UInt8]] = [:]
        for keyValue in keyValues {
            if let index = shardIndex[keyValue.key] { shards[index] = keyValue.value }
        }
        return shards
    }

    /// The puts of `shards` (by index).
    func shardPuts(_ shards: [Int: [UInt8]]) -> [EtcdOperation] {
        shards.sorted { $0.key < $1.key }.map { .put(key: shardKeys[$0.key], value: $0.value) }
    }
}
