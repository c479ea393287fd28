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

    /// Reads of every shard key, at `revision` (0: the newest).
    func shardReads(revision: Int64 = 0) -> [EtcdOperation] {
        shardKeys.map { .range(key: $0, rangeEnd: nil, revision: revision) }
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

    /// The manifest that the sealed root `sealed` and the shards among `keyValues` make.
    func manifest(_ sealed: [UInt8], shardsIn keyValues: [EtcdKeyValue]) throws(StoreError) -> FleetManifest {
        try sealer.manifest(sealed, shards: shards(in: keyValues))
    }

    /// The manifest this process saw, with shard `shard` read at least. When it took the cache as
    /// current by the root alone (`adoptCacheIfCurrent`), the root and that shard are read now in one
    /// read-only transaction; a root other than the one seen is a conflict (the rerun refreshes). A
    /// manifest in one key is read whole.
    func seenManifest(loading shard: Int) throws(StoreError) -> FleetManifest? {
        let (manifest, deferred, revision, digest) = seen.withLock {
            ($0.manifest, $0.shardsDeferred, $0.manifestRevision, $0.manifestDigest)
        }
        guard manifest == nil, deferred, let digest else { return manifest }
        let found: EtcdTransactionResult
        do {
            found = try client.transaction(
                compare: [],
                success: [.range(key: manifestKey, rangeEnd: nil), .range(key: shardKeys[shard], rangeEnd: nil)])
        } catch {
            throw storeError(error, "cannot read its manifest from etcd")
        }
        guard found.ranges.count == 2, let root = found.ranges[0]?.keyValues.first, root.modRevision == revision,
            try sealer.digest(of: root.value) == digest
        else {
            forget()
            throw StoreError(.conflict, "fleet group \(group): it changed on another machine meanwhile")
        }
        switch try sealer.open(root.value) {
        case .whole(let whole):
            return whole
        case .root(let opened):
            let bytes = found.ranges[1]?.keyValues.first { $0.key == shardKeys[shard] }?.value
            return try sealer.manifest(opened, shards: bytes.map { [shard: $0] } ?? [:], loading: [shard])
        }
    }
}
