import VaultStore

/// The manifests that earlier builds wrote, read as they are: a root over 64 shards (each item in the
/// shard of its id's first six bits), and before it a whole manifest in one key. A write over either
/// puts a tree and a root in its place (`FleetManifestKey.seal(_:over:)`); a rotation seals either
/// again as it is.
struct FleetShardedRoot: Sendable, Equatable {
    var counter: UInt64
    var itemCount: Int
    /// Each shard's digest (`FleetManifestKey.shardDigest(of:)`), by index.
    var shardDigests: [[UInt8]]

    static let magic = Array("VFM3".utf8)
    static let shardCount = 64
    static let shardMagic = Array("VFS1".utf8)

    /// The root's bytes: magic, counter (8 bytes, big-endian), item count (4 bytes), shard count (2
    /// bytes), then each shard's 16-byte digest by index.
    func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.appendBigEndian(counter)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: itemCount))
        bytes.appendBigEndian(UInt16(truncatingIfNeeded: shardDigests.count))
        for digest in shardDigests { bytes += digest }
        return bytes
    }

    /// Parses `encoded()`'s bytes; nil when they are not a root of 64 shards.
    static func decode(_ bytes: [UInt8]) -> FleetShardedRoot? {
        let header = magic.count + 14
        let digest = FleetManifest.digestByteCount
        guard bytes.count == header + shardCount * digest, Array(bytes[..<magic.count]) == magic else { return nil }
        let counter = UInt64(bigEndianBytes: bytes[magic.count..<magic.count + 8])
        let itemCount = Int(UInt32(bigEndianBytes: bytes[magic.count + 8..<magic.count + 12]))
        guard counter < FleetManifest.maximumCounter, itemCount <= FleetManifest.maximumItemCount,
            Int(UInt16(bigEndianBytes: bytes[magic.count + 12..<header])) == shardCount
        else { return nil }
        let digests = (0..<shardCount).map { Array(bytes[header + $0 * digest..<header + ($0 + 1) * digest]) }
        return FleetShardedRoot(counter: counter, itemCount: itemCount, shardDigests: digests)
    }

    /// The shard that holds `id`: its hash's first six bits.
    static func shard(of id: ItemID) -> Int { FleetManifest.leaf(of: id) >> 6 }

    /// The bytes of shard `index` with no entries: what a shard absent from etcd holds.
    static func emptyShard(_ index: Int) -> [UInt8] {
        var bytes = shardMagic + [UInt8(truncatingIfNeeded: index)]
        bytes.appendBigEndian(UInt32(0))
        return bytes
    }

    /// Adds the entries of shard `index`'s bytes to `items`; false when they are not that shard (another's,
    /// or no shard), list an item twice, or list an item of another shard. Magic, the shard's index (1
    /// byte), its entry count (4 bytes), then its entries as a leaf's.
    static func decodeShard(_ bytes: [UInt8], index: Int, into items: inout [ItemID: FleetManifest.Entry]) -> Bool {
        let header = shardMagic.count + 5
        guard bytes.count >= header, Array(bytes[..<shardMagic.count]) == shardMagic,
            bytes[shardMagic.count] == UInt8(truncatingIfNeeded: index)
        else { return false }
        let count = Int(UInt32(bigEndianBytes: bytes[shardMagic.count + 1..<header]))
        guard count <= FleetManifest.maximumItemCount, bytes.count == header + count * FleetManifest.entryByteCount
        else { return false }
        return FleetManifest.decodeEntries(bytes, from: header, count: count, into: &items) { shard(of: $0) == index }
    }
}

extension FleetManifest {
    static let wholeMagic = Array("VFM2".utf8)

    /// The bytes of the manifest in one key, as the earliest builds wrote it: magic, counter (8 bytes,
    /// big-endian), item count (4 bytes), then each item's entry as in a leaf, in id order.
    func encodedWhole() -> [UInt8] {
        var bytes = Self.wholeMagic
        bytes.appendBigEndian(counter)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: items.count))
        appendEntries(of: Array(items.keys), to: &bytes)
        return bytes
    }

    /// Parses `encodedWhole()`'s bytes; nil when they are not a manifest.
    static func decodeWhole(_ bytes: [UInt8]) -> FleetManifest? {
        let header = wholeMagic.count + 12
        guard bytes.count >= header, Array(bytes[..<wholeMagic.count]) == wholeMagic else { return nil }
        let counter = UInt64(bigEndianBytes: bytes[wholeMagic.count..<wholeMagic.count + 8])
        guard counter < maximumCounter else { return nil }
        let count = Int(UInt32(bigEndianBytes: bytes[wholeMagic.count + 8..<header]))
        var items: [ItemID: Entry] = [:]
        guard count <= maximumItemCount, bytes.count == header + count * entryByteCount,
            decodeEntries(bytes, from: header, count: count, into: &items)
        else { return nil }
        return FleetManifest(counter: counter, items: items)
    }
}
