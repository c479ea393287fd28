import FoundationEssentials
import VaultArchive
import VaultStore

/// The plaintext of an item file: `u32be length | metadata | secret`, where the metadata is a
/// VaultArchive of everything but the secret (class, attributes, dates, persistent id, generation) and
/// the secret follows as raw bytes. So a read decodes no CBOR around the secret, and the decoded
/// metadata can be reused while its bytes are unchanged (`MetadataCache`).
enum ItemRecordCodec {
    /// Everything in a record but the secret.
    struct Metadata: Codable, Sendable {
        var itemClass: ItemClass
        var attributes: ItemAttributes
        var created: Date
        var modified: Date
        var persistentID: Data
        var generation: UInt64
    }

    static let metadataOptions = VaultArchive.Options(maxSize: 1 << 20)

    static func encode(_ record: ItemRecord) throws -> [UInt8] {
        let metadata = try VaultArchive.encode(
            Metadata(
                itemClass: record.itemClass, attributes: record.attributes, created: record.created,
                modified: record.modified, persistentID: record.persistentID, generation: record.generation),
            options: metadataOptions)
        let n = UInt32(metadata.count)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + metadata.count + record.data.count)
        bytes += [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)]
        bytes += metadata
        bytes += record.data
        return bytes
    }

    /// The version in a plaintext, for the store's recovery of interrupted moves (no cache: rare);
    /// nil for a plaintext that does not decode.
    @Sendable static func version(of bytes: [UInt8]) -> ItemVersion? {
        (try? decode(bytes, cache: BoundedCache()))?.version
    }

    /// Decodes a plaintext; the metadata comes from `cache` when its bytes were seen before. The cache
    /// is keyed by the exact metadata bytes as they came out of an authenticated decryption, so an
    /// entry is reused only while a file holds byte-for-byte the same metadata: never stale, whoever
    /// wrote the file, and never holding a secret.
    static func decode(_ bytes: [UInt8], cache: BoundedCache<MetadataBytes, Metadata>) throws -> ItemRecord {
        guard bytes.count >= 4 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "record of \(bytes.count) bytes"))
        }
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard length <= bytes.count - 4 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "metadata of \(length) bytes in a record of \(bytes.count)"))
        }
        let metadataBytes = MetadataBytes(Array(bytes[4..<(4 + length)]))
        let metadata: Metadata
        if let cached = cache[metadataBytes] {
            metadata = cached
        } else {
            metadata = try VaultArchive.decode(Metadata.self, from: metadataBytes.bytes, options: metadataOptions)
            cache.insert(metadata, for: metadataBytes)
        }
        return ItemRecord(
            itemClass: metadata.itemClass, attributes: metadata.attributes, data: Data(bytes[(4 + length)...]),
            created: metadata.created, modified: metadata.modified, persistentID: metadata.persistentID,
            generation: metadata.generation)
    }

    /// The exact metadata bytes of a plaintext, as the key of the metadata cache. Hashed eight bytes
    /// per call into the hasher: `[UInt8]`'s own hashing makes one call per byte, which was about a
    /// tenth of a get's time (`perf` of `vault-bench`).
    struct MetadataBytes: Hashable, Sendable {
        let bytes: [UInt8]

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        static func == (lhs: MetadataBytes, rhs: MetadataBytes) -> Bool { lhs.bytes == rhs.bytes }

        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            var word: UInt64 = 0
            var shift: UInt64 = 0
            for byte in bytes {
                word |= UInt64(byte) << shift
                shift += 8
                if shift == 64 {
                    hasher.combine(word)
                    (word, shift) = (0, 0)
                }
            }
            if shift > 0 { hasher.combine(word) }
        }
    }
}
