/// Where etcd holds a manifest's entries: 64 nodes of 64 leaves, under an epoch that the root names.
/// A node lists its leaves' digests; a leaf lists the entries of the items whose ids begin with its
/// 12 bits (`FleetManifest.leaf(of:)`). An empty leaf, and a node of empty leaves, is not stored: its
/// digest is zero where it is listed. A write changes one leaf, its node and the root in place; a tree
/// written whole (an upgrade, a resynchronisation) is put under a new epoch in batches before the
/// root that names it, so that no reader sees half of it.
struct FleetManifestTree: Sendable, Equatable {
    /// The tree's keys are under it (`EtcdReplica.treeKeyPrefix(epoch:)`).
    var epoch: UInt64
    /// Each node's digest, by index (zero: an empty node).
    var nodeDigests: [[UInt8]]
    /// The nodes read or written: each one's 64 leaf digests, by index, one after another.
    var nodes: [Int: [UInt8]] = [:]

    static let nodeCount = 64
    static let leavesPerNode = 64
    static let leafCount = nodeCount * leavesPerNode
    static let nodeMagic = Array("VFN1".utf8)
    /// Where an empty leaf's or node's digest is listed.
    static let emptyDigest = [UInt8](repeating: 0, count: FleetManifest.digestByteCount)

    /// A tree of empty nodes under `epoch`.
    init(epoch: UInt64) {
        self.epoch = epoch
        nodeDigests = Array(repeating: Self.emptyDigest, count: Self.nodeCount)
    }

    /// A tree under `epoch` with nodes of `nodeDigests`.
    init(epoch: UInt64, nodeDigests: [[UInt8]]) {
        self.epoch = epoch
        self.nodeDigests = nodeDigests
    }

    /// A new epoch: random, so that a tree written anew never meets another's keys.
    static func newEpoch() -> UInt64 { UInt64.random(in: 0...UInt64.max) }

    /// The node that holds leaf `leaf`.
    static func node(ofLeaf leaf: Int) -> Int { leaf / leavesPerNode }

    /// The leaves of node `node`.
    static func leaves(ofNode node: Int) -> Range<Int> { node * leavesPerNode..<(node + 1) * leavesPerNode }

    /// The 64 leaf digests of an empty node.
    static let emptyNode = [UInt8](repeating: 0, count: leavesPerNode * FleetManifest.digestByteCount)

    /// Where leaf `leaf`'s digest is among its node's 64.
    static func digestRange(ofLeaf leaf: Int) -> Range<Int> {
        let start = (leaf % leavesPerNode) * FleetManifest.digestByteCount
        return start..<start + FleetManifest.digestByteCount
    }

    /// The digest of leaf `leaf` that its node lists, in the node's digests; nil when its node was not
    /// read.
    func leafDigestBytes(_ leaf: Int) -> ArraySlice<UInt8>? {
        let node = Self.node(ofLeaf: leaf)
        guard let digests = nodeDigests[node] == Self.emptyDigest ? Self.emptyNode : nodes[node] else { return nil }
        return digests[Self.digestRange(ofLeaf: leaf)]
    }

    /// The bytes of node `index` listing `leafDigests` (64 of them, one after another); nil when every
    /// leaf is empty (an empty node is not stored). Magic, the node's index (1 byte), then the digests.
    static func nodeEncoding(_ index: Int, leafDigests: [UInt8]) -> [UInt8]? {
        guard leafDigests != emptyNode else { return nil }
        return nodeMagic + [UInt8(truncatingIfNeeded: index)] + leafDigests
    }

    /// The leaf digests of node `index`'s bytes; nil when they are not that node (another's, or no
    /// node) or list no leaf.
    static func decodeNode(_ bytes: [UInt8], index: Int) -> [UInt8]? {
        let header = nodeMagic.count + 1
        guard bytes.count == header + emptyNode.count, Array(bytes[..<nodeMagic.count]) == nodeMagic,
            bytes[nodeMagic.count] == UInt8(truncatingIfNeeded: index)
        else { return nil }
        let digests = Array(bytes[header...])
        return digests == emptyNode ? nil : digests
    }
}

/// What a write puts of a manifest's tree beside its root: the nodes and leaves it changed (nil: an
/// empty one, deleted), in place, or, under a new epoch, the whole tree.
struct FleetManifestTreeWrite: Sendable {
    var epoch: UInt64
    /// Whether the whole tree is written under a new epoch: put in batches before the root, and every
    /// other epoch's keys deleted with it.
    var isNewEpoch: Bool
    /// By index: a node's or a leaf's bytes, nil when it is empty.
    var nodes: [Int: [UInt8]?] = [:]
    var leaves: [Int: [UInt8]?] = [:]
}
