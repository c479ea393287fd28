import VaultStore

/// What the `manifest` key of a fleet group holds, sealed under the group's key: the manifest's counter,
/// its number of items, and the digest of each of its shards (`FleetManifestKey.shardDigest(of:)`). The shards themselves
/// are not sealed (item ids, digests and versions, no secret): the root's digests bind them, so a
/// shard replaced or taken from an older manifest fails the check, and a rotation seals the root alone
/// again.
struct FleetManifestRoot: Sendable, Equatable {
    /// The manifest's counter.
    var counter: UInt64
    /// How many items its shards list together.
    var itemCount: Int
    /// Each shard's digest, by index (`FleetManifest.shardCount` of them).
    var shardDigests: [[UInt8]]

    /// A root of `counter` over shards with `shardDigests`, which list `itemCount` items.
    init(counter: UInt64, itemCount: Int, shardDigests: [[UInt8]]) {
        self.counter = counter
        self.itemCount = itemCount
        self.shardDigests = shardDigests
    }

    static let magic = Array("VFM3".utf8)

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

    /// Parses `encoded()`'s bytes; nil when they are not a root of `FleetManifest.shardCount` shards.
    static func decode(_ bytes: [UInt8]) -> FleetManifestRoot? {
        let header = magic.count + 14
        let digest = FleetManifest.digestByteCount
        guard bytes.count == header + FleetManifest.shardCount * digest, Array(bytes[..<magic.count]) == magic
        else { return nil }
        let counter = UInt64(bigEndianBytes: bytes[magic.count..<magic.count + 8])
        let itemCount = Int(UInt32(bigEndianBytes: bytes[magic.count + 8..<magic.count + 12]))
        guard counter < FleetManifest.maximumCounter, itemCount <= FleetManifest.maximumItemCount,
            Int(UInt16(bigEndianBytes: bytes[magic.count + 12..<header])) == FleetManifest.shardCount
        else { return nil }
        let digests = (0..<FleetManifest.shardCount).map {
            Array(bytes[header + $0 * digest..<header + ($0 + 1) * digest])
        }
        return FleetManifestRoot(counter: counter, itemCount: itemCount, shardDigests: digests)
    }
}

/// What a fleet group's `manifest` key opens to: a root over shards, or a whole manifest in one key,
/// as builds before shards wrote it (the next write puts its shards and a root in its place).
enum OpenedManifest: Sendable {
    case root(FleetManifestRoot)
    case whole(FleetManifest)

    /// The manifest's counter.
    var counter: UInt64 {
        switch self {
        case .root(let root): root.counter
        case .whole(let manifest): manifest.counter
        }
    }

    /// Parses a root's or a whole manifest's bytes; nil when they are neither.
    static func decode(_ bytes: [UInt8]) -> OpenedManifest? {
        if let root = FleetManifestRoot.decode(bytes) { return .root(root) }
        return FleetManifest.decodeWhole(bytes).map { .whole($0) }
    }
}
