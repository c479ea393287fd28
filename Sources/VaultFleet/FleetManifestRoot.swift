import VaultStore

/// What the `manifest` key of a fleet group holds, sealed under the group's key: the manifest's counter,
/// its number of items, and its tree's epoch and node digests (`FleetManifestTree`). The nodes and
/// leaves themselves are not sealed (item ids, digests and versions, no secret): the root's digests
/// bind them, so that a node or leaf replaced or taken from an older manifest fails the check, and a
/// rotation seals the root alone again.
struct FleetManifestRoot: Sendable, Equatable {
    /// The manifest's counter.
    var counter: UInt64
    /// How many items its leaves list together.
    var itemCount: Int
    /// Its tree's epoch and each node's digest (`FleetManifestTree.nodeCount` of them).
    var epoch: UInt64
    var nodeDigests: [[UInt8]]

    /// A root of `counter` over the tree `tree`, whose leaves list `itemCount` items.
    init(counter: UInt64, itemCount: Int, tree: FleetManifestTree) {
        self.counter = counter
        self.itemCount = itemCount
        epoch = tree.epoch
        nodeDigests = tree.nodeDigests
    }

    static let magic = Array("VFM4".utf8)

    /// The root's bytes: magic, counter (8 bytes, big-endian), item count (4 bytes), epoch (8 bytes),
    /// node count (2 bytes), then each node's 16-byte digest by index (zero: an empty node).
    func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.appendBigEndian(counter)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: itemCount))
        bytes.appendBigEndian(epoch)
        bytes.appendBigEndian(UInt16(truncatingIfNeeded: nodeDigests.count))
        for digest in nodeDigests { bytes += digest }
        return bytes
    }

    /// Parses `encoded()`'s bytes; nil when they are not a root of `FleetManifestTree.nodeCount` nodes.
    static func decode(_ bytes: [UInt8]) -> FleetManifestRoot? {
        let header = magic.count + 22
        let digest = FleetManifest.digestByteCount
        guard bytes.count == header + FleetManifestTree.nodeCount * digest, Array(bytes[..<magic.count]) == magic
        else { return nil }
        let counter = UInt64(bigEndianBytes: bytes[magic.count..<magic.count + 8])
        let itemCount = Int(UInt32(bigEndianBytes: bytes[magic.count + 8..<magic.count + 12]))
        let epoch = UInt64(bigEndianBytes: bytes[magic.count + 12..<magic.count + 20])
        guard counter < FleetManifest.maximumCounter, itemCount <= FleetManifest.maximumItemCount,
            Int(UInt16(bigEndianBytes: bytes[magic.count + 20..<header])) == FleetManifestTree.nodeCount
        else { return nil }
        let digests = (0..<FleetManifestTree.nodeCount).map {
            Array(bytes[header + $0 * digest..<header + ($0 + 1) * digest])
        }
        return FleetManifestRoot(
            counter: counter, itemCount: itemCount, tree: FleetManifestTree(epoch: epoch, nodeDigests: digests))
    }
}

/// What a fleet group's `manifest` key opens to: a root over a tree, or a manifest as earlier builds
/// wrote it (`FleetManifestLegacy.swift`), which is read as it is; the next write puts a tree and a root
/// in its place.
enum OpenedManifest: Sendable {
    case root(FleetManifestRoot)
    case sharded(FleetShardedRoot)
    case whole(FleetManifest)

    /// The manifest's counter.
    var counter: UInt64 {
        get {
            switch self {
            case .root(let root): root.counter
            case .sharded(let root): root.counter
            case .whole(let manifest): manifest.counter
            }
        }
        set {
            switch self {
            case .root(var root):
                root.counter = newValue
                self = .root(root)
            case .sharded(var root):
                root.counter = newValue
                self = .sharded(root)
            case .whole(var manifest):
                manifest.counter = newValue
                self = .whole(manifest)
            }
        }
    }

    /// How many items the manifest lists.
    var itemCount: Int {
        switch self {
        case .root(let root): root.itemCount
        case .sharded(let root): root.itemCount
        case .whole(let manifest): manifest.items.count
        }
    }

    /// Its bytes, in its own format (a rotation seals them again as they are).
    func encoded() -> [UInt8] {
        switch self {
        case .root(let root): root.encoded()
        case .sharded(let root): root.encoded()
        case .whole(let manifest): manifest.encodedWhole()
        }
    }

    /// Parses a root's bytes, or an earlier build's; nil when they are none of them.
    static func decode(_ bytes: [UInt8]) -> OpenedManifest? {
        if let root = FleetManifestRoot.decode(bytes) { return .root(root) }
        if let root = FleetShardedRoot.decode(bytes) { return .sharded(root) }
        return FleetManifest.decodeWhole(bytes).map { .whole($0) }
    }
}
