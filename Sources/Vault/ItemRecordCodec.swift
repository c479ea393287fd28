import FoundationEssentials
import VaultArchive
import VaultCrypto
import VaultStore

/// The plaintext of an item file: `u32be length | metadata | secret`, where the metadata is a
/// VaultArchive of everything but the secret (class, attributes, dates, persistent id, generation) and
/// the secret follows as raw bytes. So a read decodes no CBOR around the secret, and the decoded
/// metadata can be reused while its bytes are unchanged (`MetadataCache`). The metadata's archive is
/// written and read by `ItemMetadataArchive` where it can, else by `VaultArchive`: the same bytes.
enum ItemRecordCodec {
    /// Everything in a record but the secret.
    struct Metadata: Codable, Sendable {
        var itemClass: ItemClass
        var attributes: ItemAttributes
        var created: Date
        var modified: Date
        var persistentID: Data
        var generation: UInt64
        /// The program that wrote this version (its application identifier, or its name).
        var client: String? = nil
        /// The effective uid that wrote this version.
        var writer: UInt32? = nil
        /// True in a tombstone: the record of a deletion, kept in the item's history.
        var deleted: Bool? = nil
    }

    static let metadataOptions = VaultArchive.Options(maxSize: 1 << 20)

    /// The plaintext of `record`. With `cache`, the record's metadata goes into it under the bytes
    /// written, so that the next read of the item (a writer's next update of it, above all) decodes
    /// nothing, when a decode of those bytes would give back exactly the record (`cacheable`); as a
    /// provisional entry, which never keeps a read's entry out (`BoundedCache`).
    static func encode(_ record: ItemRecord, cache: BoundedCache<MetadataBytes, ItemRecord>? = nil) throws -> [UInt8] {
        let fields = Metadata(
            itemClass: record.itemClass, attributes: record.attributes, created: record.created,
            modified: record.modified, persistentID: record.persistentID, generation: record.generation,
            client: record.client, writer: record.writer, deleted: record.isDeletion ? true : nil)
        let metadata =
            try ItemMetadataArchive.encode(fields, maxSize: metadataOptions.maxSize)
            ?? VaultArchive.encode(fields, options: metadataOptions)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + metadata.count + record.data.count)
        bytes.appendBigEndian(UInt32(metadata.count))
        bytes += metadata
        bytes += record.data
        if let cache, let entry = cacheable(record) {
            // The encoder's buffer has room to spare, which the cache's byte count would not see.
            cache.insert(entry, for: MetadataBytes(copying: metadata[...]), provisional: true)
        }
        return bytes
    }

    /// `record` without its secret as a decode of its metadata gives it, or nil when that may differ:
    /// a date off by an ulp in the archive's seconds since 1970 (one made by `Date()` can be, see
    /// docs/ARCHIVE.md; the vault's own are made to round-trip by `ItemRecord.now`). A bytes attribute
    /// is copied into storage of its own, as a decode makes it: a caller's slice would index from
    /// elsewhere and keep its whole buffer alive, unseen by the cache's byte count.
    static func cacheable(_ record: ItemRecord) -> ItemRecord? {
        func readsBack(_ date: Date?) -> Bool {
            guard let date else { return true }
            return Date(timeIntervalSince1970: date.timeIntervalSince1970) == date
        }
        let attributes = record.attributes
        guard readsBack(record.created), readsBack(record.modified), readsBack(attributes.creationDate),
            readsBack(attributes.modificationDate)
        else { return nil }
        var entry = record.with(data: Data())
        if let generic = attributes.generic { entry.attributes.generic = Data(Array(generic)) }
        return entry
    }

    /// Where the secret is in a plaintext that `decode` read.
    static func secretRange(of bytes: [UInt8]) -> Range<Int> {
        let length = Int(UInt32(bigEndianBytes: bytes[0..<4]))
        return (4 + length)..<bytes.count
    }

    /// The version in a plaintext, for the store's recovery of interrupted moves (no cache: rare);
    /// nil for a plaintext that does not decode.
    @Sendable static func version(of bytes: [UInt8]) -> ItemVersion? {
        (try? decode(bytes, cache: nil))?.version
    }

    /// A cache of decoded metadata of at most `byteCapacity` bytes.
    static func metadataCache(byteCapacity: Int) -> BoundedCache<MetadataBytes, ItemRecord> {
        BoundedCache(byteCapacity: byteCapacity) { key, record in HeapBytes.of(key.bytes) + record.heapByteEstimate }
    }

    /// Decodes a plaintext; the metadata comes from `cache` when its bytes were seen before. The cache
    /// is keyed by the exact metadata bytes (as they came out of an authenticated decryption, or as
    /// this handle encoded them), so an entry is reused only while a file holds byte-for-byte the same
    /// metadata: never stale, whoever wrote the file, and never holding a secret (its records have
    /// empty data).
    static func decode(
        _ bytes: [UInt8], cache: BoundedCache<MetadataBytes, ItemRecord>?, keepingSecret: Bool = true
    ) throws -> ItemRecord {
        guard bytes.count >= 4 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "record of \(bytes.count) bytes"))
        }
        let length = Int(UInt32(bigEndianBytes: bytes[0..<4]))
        guard length <= bytes.count - 4 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "metadata of \(length) bytes in a record of \(bytes.count)"))
        }
        // A slice of the plaintext to look up with; the key that goes into the cache is a copy of its
        // own, so the cache never keeps the plaintext (which holds the secret) alive.
        let lookup = MetadataBytes(bytes[4..<(4 + length)])
        // Without the secret (`keepingSecret` false), the caller takes it from `secretRange` itself.
        let secret = keepingSecret ? Data(bytes[(4 + length)...]) : Data()
        if let cached = cache?[lookup] { return cached.with(data: secret) }
        let key = MetadataBytes(copying: lookup.bytes)
        let metadata =
            try ItemMetadataArchive.decode(key.bytes, maxSize: metadataOptions.maxSize)
            ?? VaultArchive.decode(Metadata.self, from: Array(key.bytes), options: metadataOptions)
        try ItemRecord.checkBounds(persistentID: metadata.persistentID, generation: metadata.generation)
        var record = ItemRecord(
            itemClass: metadata.itemClass, attributes: metadata.attributes, data: Data(), created: metadata.created,
            modified: metadata.modified, persistentID: metadata.persistentID, generation: metadata.generation)
        record.client = metadata.client
        record.writer = metadata.writer
        record.isDeletion = metadata.deleted ?? false
        cache?.insert(record, for: key)
        return record.with(data: secret)
    }

    /// The exact metadata bytes of a plaintext, as the key of the metadata cache (`FoldedHash`).
    struct MetadataBytes: Hashable, Sendable {
        let bytes: ArraySlice<UInt8>

        init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

        /// A key in storage of its own, sized to `bytes`: what goes into the cache, which then keeps no
        /// larger buffer alive (a plaintext with its secret, an encoder's spare room) and counts what it
        /// holds.
        init(copying bytes: ArraySlice<UInt8>) { self.bytes = ArraySlice(Array(bytes)) }

        static func == (lhs: MetadataBytes, rhs: MetadataBytes) -> Bool {
            lhs.bytes.span.hasSameBytes(as: rhs.bytes.span)
        }

        func hash(into hasher: inout Hasher) { FoldedHash.combine(bytes.span, into: &hasher) }
    }
}
