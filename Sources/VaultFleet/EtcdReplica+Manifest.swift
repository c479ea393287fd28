import VaultEtcd
import VaultStore

/// Where etcd holds a fleet group's manifest: its root under `manifest`, and its shards under
/// `shards/<index, two hex digits>`, each read and written by name (a key that something else put
/// under `shards/` is never read).
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
