import VaultCrypto
import VaultStore

/// What a fleet group holds at one point of its history: a counter that every write raises by one,
/// and each item's id with a digest of its file. It is stored in the replica next to the items, and
/// every write replaces it in the same replica transaction as the item. A machine that remembers the
/// highest counter it saw (`FleetMark`) can tell when the replica went back (a restored snapshot, a
/// member rolled back) and when an item was deleted, replaced with an older value of itself or
/// brought back after its deletion.
///
/// etcd holds it in `shardCount` shards, each item in the shard of its id's first six bits, and a
/// root that holds the counter and each shard's digest, sealed under the group's key
/// (`FleetManifestRoot`): a write puts the root and its item's shard, not every item's entry.
struct FleetManifest: Sendable {
    /// Raised by one with every write and deletion in the group.
    var counter: UInt64
    /// Each item's id with the 16-byte digest of its file (`FleetManifestKey.digest(of:)`) and its
    /// version: the counter of the manifest that its last write made.
    var items: [ItemID: Entry]
    /// The digests of its shards as etcd holds them (its root's); nil when etcd holds no shards of it
    /// (a manifest in one key, as builds before shards wrote it, or one not written yet).
    var shardDigests: [[UInt8]]?
    /// The shards whose items `items` holds: nil, every shard; else a write's own shard alone (read
    /// without the others, `EtcdReplica.writeBasis(item:shard:)`), the others' items counted in
    /// `unloadedItemCount`.
    var loadedShards: Set<Int>?
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
    init(counter: UInt64, items: [ItemID: Entry], shardDigests: [[UInt8]]? = nil) {
        self.counter = counter
        self.items = items
        self.shardDigests = shardDigests
    }

    /// The most items a fleet group holds: a resynchronisation puts every shard in one request, 56 bytes
    /// an item (75 in base64): at this many, half of the 1.5 MiB that etcd takes by default, which leaves
    /// room for the rest of that request.
    static let maximumItemCount = 10_000

    static let digestByteCount = 16
    static let entryByteCount = ItemID.hashByteCount + digestByteCount + 8

    /// Above every counter that writes reach (one a nanosecond for a century is below 2^62): a counter
    /// at the end of `UInt64` would overflow the next write's, so it is no manifest of ours.
    static let maximumCounter: UInt64 = 1 << 62

    // MARK: Shards

    static let shardCount = 64
    static let shardMagic = Array("VFS1".utf8)

    /// The shard that holds `id`: its hash's first six bits, from its first two (lowercase) hex digits,
    /// read from the file name in place (a write compares every entry's shard).
    static func shard(of id: ItemID) -> Int {
        var digits = id.fileName.utf8.makeIterator()
        let high = hexValue(digits.next() ?? 0)
        return ((high << 4) | hexValue(digits.next() ?? 0)) >> 2
    }

    private static func hexValue(_ digit: UInt8) -> Int {
        digit >= UInt8(ascii: "a") ? Int(digit - UInt8(ascii: "a")) + 10 : Int(digit - UInt8(ascii: "0"))
    }

    /// The shards whose entries differ between this manifest and `previous`.
    func shards(differingFrom previous: FleetManifest) -> Set<Int> {
        var changed = Set<Int>()
        for (id, entry) in items where previous.items[id] != entry { changed.insert(Self.shard(of: id)) }
        for id in previous.items.keys where items[id] == nil { changed.insert(Self.shard(of: id)) }
        return changed
    }

    /// The bytes of shards `indices`: magic, the shard's index (1 byte), its entry count (4 bytes), then
    /// each entry's 32 hash bytes, 16 digest bytes and version (8 bytes, big-endian), in id order.
    func shardEncodings(_ indices: Set<Int>) -> [Int: [UInt8]] {
        var entries: [Int: [ItemID]] = [:]
        for index in indices { entries[index] = [] }
        for id in items.keys {
            let index = Self.shard(of: id)
            if indices.contains(index) { entries[index, default: []].append(id) }
        }
        return entries.reduce(into: [:]) { result, shard in
            var bytes = Self.shardHeader(shard.key, count: shard.value.count)
            appendEntries(of: shard.value, to: &bytes)
            result[shard.key] = bytes
        }
    }

    /// Appends the entries of `ids`, in id order: each one's 32 hash bytes, 16 digest bytes and version
    /// (8 bytes, big-endian).
    private func appendEntries(of ids: [ItemID], to bytes: inout [UInt8]) {
        bytes.reserveCapacity(bytes.count + ids.count * Self.entryByteCount)
        for id in ids.sorted() {
            guard let entry = items[id] else { continue }
            bytes += id.hashBytes + entry.digest
            bytes.appendBigEndian(entry.version)
        }
    }

    /// The bytes of shard `index` with no entries: what a shard absent from etcd holds.
    static func emptyShard(_ index: Int) -> [UInt8] { shardHeader(index, count: 0) }

    private static func shardHeader(_ index: Int, count: Int) -> [UInt8] {
        var bytes = shardMagic + [UInt8(truncatingIfNeeded: index)]
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: count))
        return bytes
    }

    /// Adds the entries of shard `index`'s bytes to `items`; false when they are not that shard (another's,
    /// or no shard), list an item twice, or list an item of another shard.
    static func decodeShard(_ bytes: [UInt8], index: Int, into items: inout [ItemID: Entry]) -> Bool {
        let header = shardMagic.count + 5
        guard bytes.count >= header, Array(bytes[..<shardMagic.count]) == shardMagic,
            bytes[shardMagic.count] == UInt8(truncatingIfNeeded: index)
        else { return false }
        let count = Int(UInt32(bigEndianBytes: bytes[shardMagic.count + 1..<header]))
        guard count <= maximumItemCount, bytes.count == header + count * entryByteCount else { return false }
        return decodeEntries(bytes, from: header, count: count, into: &items) { shard(of: $0) == index }
    }

    /// Adds `count` entries from `offset` of `bytes` to `items`; false when an id is not one, is there
    /// already, or `belongs` refuses it.
    private static func decodeEntries(
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

    // MARK: A manifest in one key

    static let wholeMagic = Array("VFM2".utf8)

    /// The bytes of the manifest in one key, as builds before shards wrote it: magic, counter (8 bytes,
    /// big-endian), item count (4 bytes), then each item's entry as in a shard, in id order.
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
