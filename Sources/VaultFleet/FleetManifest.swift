import VaultCrypto
import VaultStore

/// What a fleet group holds at one point of its history: a counter that every write raises by one,
/// and each item's id with a digest of its file. It is stored in the replica next to the items, and
/// every write replaces it in the same replica transaction as the item. A machine that remembers the
/// highest counter it saw (`FleetMark`) can tell when the replica went back (a restored snapshot, a
/// member rolled back) and when an item was deleted, replaced with an older value of itself or
/// brought back after its deletion.
///
/// etcd holds it as a tree (`FleetManifestTree`): a root sealed under the group's key with the counter
/// and the digests of 64 nodes (`FleetManifestRoot`), each node the digests of its 64 leaves, each
/// leaf the entries of the items whose ids begin with its 12 bits. A write puts the root, its item's
/// node and its item's leaf: what it carries does not grow with the group.
struct FleetManifest: Sendable {
    /// Raised by one with every write and deletion in the group.
    var counter: UInt64
    /// Each item's id with the 16-byte digest of its file (`FleetManifestKey.digest(of:)`) and its
    /// version: the counter of the manifest that its last write made.
    var items: [ItemID: Entry]
    /// The tree etcd holds it in; nil when etcd holds no tree of it (a manifest that builds before the
    /// tree wrote, or one not written yet): its next write puts a whole tree.
    var tree: FleetManifestTree?
    /// The leaves whose items `items` holds: nil, every leaf; else a write's own leaf alone (read
    /// without the others, `EtcdReplica.writeBasis(item:leaf:)`), the others' items counted in
    /// `unloadedItemCount`.
    var loadedLeaves: Set<Int>?
    var unloadedItemCount = 0

    /// How many items the manifest lists, loaded or not.
    var itemCount: Int { items.count + unloadedItemCount }

    /// One item of a manifest.
    struct Entry: Sendable, Equatable {
        /// `FleetManifestKey.digest(of:)` of the item's file.
        var digest: [UInt8]
        /// The counter of the manifest its last write made.
        var version: UInt64

        /// An entry.
        init(digest: [UInt8], version: UInt64) {
            self.digest = digest
            self.version = version
        }
    }

    /// A manifest of `items` at `counter`.
    init(counter: UInt64, items: [ItemID: Entry], tree: FleetManifestTree? = nil) {
        self.counter = counter
        self.items = items
        self.tree = tree
    }

    /// The most items a fleet group holds: a complete refresh reads and checks every one, and the
    /// figures in docs/PERFORMANCE.md are measured up to this size.
    static let maximumItemCount = 10_000

    static let digestByteCount = 16
    static let entryByteCount = ItemID.hashByteCount + digestByteCount + 8

    /// Above every counter that writes reach (one a nanosecond for a century is below 2^62): a counter
    /// at the end of `UInt64` would overflow the next write's, so it is no manifest of ours.
    static let maximumCounter: UInt64 = 1 << 62

    // MARK: Leaves

    static let leafMagic = Array("VFL1".utf8)

    /// The leaf that holds `id`: its hash's first 12 bits, from its first three (lowercase) hex digits,
    /// read from the file name in place (a write compares every entry's leaf).
    static func leaf(of id: ItemID) -> Int {
        var digits = id.fileName.utf8.makeIterator()
        var leaf = 0
        for _ in 0..<3 { leaf = leaf << 4 | Int(digits.next().flatMap(Hex.value(ofDigit:)) ?? 0) }
        return leaf
    }

    /// The leaves whose entries differ between this manifest and `previous`.
    func leaves(differingFrom previous: FleetManifest) -> Set<Int> {
        var changed = Set<Int>()
        for (id, entry) in items where previous.items[id] != entry { changed.insert(Self.leaf(of: id)) }
        for id in previous.items.keys where items[id] == nil { changed.insert(Self.leaf(of: id)) }
        return changed
    }

    /// The ids of the items of each leaf that holds any, of leaves `indices` (nil: every leaf).
    func idsByLeaf(_ indices: Set<Int>? = nil) -> [Int: [ItemID]] {
        var ids: [Int: [ItemID]] = [:]
        for id in items.keys {
            let leaf = Self.leaf(of: id)
            if indices?.contains(leaf) ?? true { ids[leaf, default: []].append(id) }
        }
        return ids
    }

    /// The bytes of leaf `index` holding the entries of `ids`; nil when it holds none (an empty leaf
    /// is not stored). Magic, the leaf's index (2 bytes), its entry count (4 bytes), then each entry's
    /// 32 hash bytes, 16 digest bytes and version (8 bytes, big-endian), in id order.
    func leafEncoding(_ index: Int, ids: [ItemID]) -> [UInt8]? {
        guard !ids.isEmpty else { return nil }
        var bytes = Self.leafMagic
        bytes.appendBigEndian(UInt16(truncatingIfNeeded: index))
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: ids.count))
        appendEntries(of: ids, to: &bytes)
        return bytes
    }

    /// Adds the entries of leaf `index`'s bytes to `items`; false when they are not that leaf (another's,
    /// or no leaf), hold no entry, list an item twice, or list an item of another leaf.
    static func decodeLeaf(_ bytes: [UInt8], index: Int, into items: inout [ItemID: Entry]) -> Bool {
        let header = leafMagic.count + 6
        guard bytes.count >= header, Array(bytes[..<leafMagic.count]) == leafMagic,
            Int(UInt16(bigEndianBytes: bytes[leafMagic.count..<leafMagic.count + 2])) == index
        else { return false }
        let count = Int(UInt32(bigEndianBytes: bytes[leafMagic.count + 2..<header]))
        guard count > 0, count <= maximumItemCount, bytes.count == header + count * entryByteCount else {
            return false
        }
        return decodeEntries(bytes, from: header, count: count, into: &items) { leaf(of: $0) == index }
    }

    // MARK: Entries

    /// Appends the entries of `ids`, in id order: each one's 32 hash bytes, 16 digest bytes and version
    /// (8 bytes, big-endian).
    func appendEntries(of ids: [ItemID], to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + ids.count * Self.entryByteCount)
        for id in ids.sorted() {
            guard let entry = items[id] else { continue }
            bytes += id.hashBytes + entry.digest
            bytes.appendBigEndian(entry.version)
        }
    }

    /// Adds `count` entries from `offset` of `bytes` to `items`; false when an id is not one, is there
    /// already, or `belongs` refuses it.
    static func decodeEntries(
        _ bytes: [UInt8], from offset: Int, count: Int, into items: inout [ItemID: Entry],
        belongs: (ItemID) -> Bool = { _ in true }
    ) -> Bool {
        for index in 0..<count {
            let start = offset + index * entryByteCount
            guard let id = try? ItemID(hashBytes: Array(bytes[start..<start + ItemID.hashByteCount])), belongs(id)
            else { return false }
            let digestStart = start + ItemID.hashByteCount
            let version = UInt64(bigEndianBytes: bytes[digestStart + digestByteCount..<start + entryByteCount])
            let entry = Entry(digest: Array(bytes[digestStart..<digestStart + digestByteCount]), version: version)
            guard items.updateValue(entry, forKey: id) == nil else { return false }
        }
        return true
    }
}
