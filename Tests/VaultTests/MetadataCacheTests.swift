import Foundation
import Testing
import VaultStore
import VaultTestSupport

@testable import Vault

/// The handle's cache of decoded metadata (`ItemRecordCodec.decode`) also takes what the handle itself
/// writes, so a writer's next read of an item decodes nothing; an entry must be exactly what a decode of
/// its bytes gives.
@Suite struct MetadataCacheTests {
    /// A record with every attribute set, dates with fractions of a second.
    func fullRecord() throws -> ItemRecord {
        var attributes = ItemAttributes(service: "svc", account: "acct", label: "label", comment: "comment")
        attributes.itemDescription = "description"
        attributes.generic = Data([0, 1, 2, 255])
        attributes.genericIsText = false
        attributes.creator = 0x6162_6364
        attributes.type = 0x7778_797A
        attributes.isInvisible = true
        attributes.isNegative = false
        attributes.accessible = .afterFirstUnlock
        attributes.synchronizable = false
        attributes.dataTypedKeys = ["acct", "labl"]
        return ItemRecord(
            itemClass: .genericPassword, attributes: attributes, data: Data("the secret".utf8),
            created: Date(timeIntervalSince1970: 1_700_000_000.25),
            modified: Date(timeIntervalSince1970: 1_700_000_123.5), persistentID: Data((0..<16).map { UInt8($0) }),
            generation: 7)
    }

    func expectSameMetadata(_ a: ItemRecord, _ b: ItemRecord) {
        #expect(a.itemClass == b.itemClass)
        #expect(a.attributes == b.attributes)
        #expect(a.created == b.created)
        #expect(a.modified == b.modified)
        #expect(a.persistentID == b.persistentID)
        #expect(a.generation == b.generation)
    }

    @Test func anEncodedRecordIsCachedAsItsBytesDecode() throws {
        let cache = ItemRecordCodec.metadataCache(byteCapacity: 1 << 20)
        for record in [
            try fullRecord(),
            ItemRecord(
                itemClass: .internetPassword, attributes: ItemAttributes(), data: Data(),
                created: Date(timeIntervalSince1970: 0),
                modified: Date(timeIntervalSince1970: 1), persistentID: Data(), generation: 1),
        ] {
            let bytes = try ItemRecordCodec.encode(record, cache: cache)
            let decoded = try ItemRecordCodec.decode(bytes, cache: nil)
            let length = Int(UInt32(bigEndianBytes: bytes[0..<4]))
            let cached = try #require(cache[ItemRecordCodec.MetadataBytes(bytes[4..<(4 + length)])])
            expectSameMetadata(cached, decoded)
            expectSameMetadata(cached, record)
            #expect(cached.data.isEmpty)  // the cache never holds a secret
            #expect(try ItemRecordCodec.decode(bytes, cache: cache).data == record.data)
        }
        #expect(cache.count == 2)
    }

    @Test func aWriteFillsTheCacheAndTheNextReadUsesIt() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("v1"))
            #expect(vault.engine.metadataCache.count == 1)
            let found = try vault.copyMatching(.genericPassword(service: "svc", account: "a"), returning: .data)
            #expect(found.first?.data == Data("v1"))
            #expect(vault.engine.metadataCache.count == 1)  // a hit: nothing decoded, nothing added
            try vault.update(.genericPassword(service: "svc", account: "a"), with: ItemChanges(data: Data("v2")))
            #expect(vault.engine.metadataCache.count == 2)
            let reader = try t.open()
            #expect(
                try reader.copyMatching(.genericPassword(service: "svc", account: "a"), returning: .data).first?.data
                    == Data("v2"))
            #expect(reader.engine.metadataCache.count == 1)
        }
    }
}
