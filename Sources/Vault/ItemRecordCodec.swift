import FoundationEssentials
import Synchronization
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

    /// Decodes a plaintext; the metadata comes from `cache` when its bytes were seen before.
    static func decode(_ bytes: [UInt8], cache: MetadataCache) throws -> ItemRecord {
        guard bytes.count >= 4 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "record of \(bytes.count) bytes"))
        }
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard length <= bytes.count - 4 else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "metadata of \(length) bytes in a record of \(bytes.count)"))
        }
        let metadataBytes = Array(bytes[4..<(4 + length)])
        let metadata: Metadata
        if let cached = cache.metadata(for: metadataBytes) {
            metadata = cached
        } else {
            metadata = try VaultArchive.decode(Metadata.self, from: metadataBytes, options: metadataOptions)
            cache.insert(metadata, for: metadataBytes)
        }
        return ItemRecord(
            itemClass: metadata.itemClass, attributes: metadata.attributes, data: Data(bytes[(4 + length)...]),
            created: metadata.created, modified: metadata.modified, persistentID: metadata.persistentID,
            generation: metadata.generation)
    }
}

/// Decoded item metadata (never secrets), keyed by its exact bytes as they came out of an
/// authenticated decryption: reused only while a file holds byte-for-byte the same metadata, so it
/// can never be stale, whoever wrote the file. Bounded: cleared when it grows past `capacity`.
final class MetadataCache: Sendable {
    private let entries = Mutex<[[UInt8]: ItemRecordCodec.Metadata]>([:])
    let capacity: Int

    init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    func metadata(for bytes: [UInt8]) -> ItemRecordCodec.Metadata? {
        entries.withLock { $0[bytes] }
    }

    func insert(_ metadata: ItemRecordCodec.Metadata, for bytes: [UInt8]) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[bytes] = metadata
        }
    }
}

/// The attributes (never the secret) of the items a handle has scanned, each with the fingerprint of
/// the file it came from: a query that does not return secrets re-reads only the files whose
/// fingerprint changed (a readlink and a stat instead of a read and a decryption). Bounded like
/// `MetadataCache`.
final class AttributeCache: Sendable {
    struct Key: Hashable {
        let group: AccessGroup
        let id: ItemID
    }

    private let entries = Mutex<[Key: (fingerprint: ItemFingerprint, record: ItemRecord)]>([:])
    let capacity: Int

    init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    func record(_ key: Key, fingerprint: ItemFingerprint) -> ItemRecord? {
        entries.withLock { entries in
            guard let entry = entries[key], entry.fingerprint == fingerprint else { return nil }
            return entry.record
        }
    }

    /// Keeps `record` without its secret.
    func insert(_ record: ItemRecord, _ key: Key, fingerprint: ItemFingerprint) {
        var stripped = record
        stripped.data = Data()
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = (fingerprint, stripped)
        }
    }
}

/// Item ids by group and primary key: an id is a keyed hash of both and never changes for a handle
/// (whose keys do not change). Bounded like `MetadataCache`.
final class ItemIDCache: Sendable {
    struct Key: Hashable {
        let group: AccessGroup
        let primaryKey: [UInt8]
    }

    private let entries = Mutex<[Key: ItemID]>([:])
    let capacity: Int

    init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    func id(_ key: Key) -> ItemID? {
        entries.withLock { $0[key] }
    }

    func insert(_ id: ItemID, _ key: Key) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = id
        }
    }
}
