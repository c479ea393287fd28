import Foundation
import Testing
import VaultStore
import VaultTestSupport

@testable import Vault

/// The handle's cache of decoded metadata (`ItemRecordCodec.decode`) also takes what the handle itself
/// writes, so a writer's next read of an item decodes nothing; an entry must be exactly what a decode of
/// its bytes gives.
@Suite struct MetadataCacheTests {
    /// Records with every attribute of their class set: non-ASCII and decomposed text, a group, the
    /// dates in the attributes too, and dates that the archive's seconds since 1970 hold exactly.
    func records() throws -> [ItemRecord] {
        var generic = ItemAttributes(service: "svc", account: "acct", label: "label", comment: "comment")
        generic.itemDescription = "description"
        generic.generic = Data([0, 1, 2, 255])
        generic.genericIsText = false
        generic.creator = 0x6162_6364
        generic.type = 0x7778_797A
        generic.isInvisible = true
        generic.isNegative = false
        generic.accessible = .afterFirstUnlock
        generic.synchronizable = false
        generic.dataTypedKeys = ["acct", "labl", "desc"]
        var internet = ItemAttributes()
        internet.account = "e\u{301}l\u{e8}ve"
        internet.server = "h\u{f6}st.example"
        internet.securityDomain = "realm"
        internet.`protocol` = "htps"
        internet.authenticationType = "dflt"
        internet.port = 8443
        internet.path = "/p/\u{540d}"
        internet.label = "label"
        internet.accessGroup = try AccessGroup("com.example.shared")
        internet.synchronizable = true
        internet.creationDate = Date(timeIntervalSince1970: 1_600_000_000)
        internet.modificationDate = Date(timeIntervalSince1970: 1_600_000_001.5)
        return [
            ItemRecord(
                itemClass: .genericPassword, attributes: generic, data: Data("the secret".utf8),
                created: Date(timeIntervalSince1970: 1_700_000_000.25),
                modified: Date(timeIntervalSince1970: 1_700_000_123.5), persistentID: Data((0..<16).map { UInt8($0) }),
                generation: 7),
            ItemRecord(
                itemClass: .internetPassword, attributes: internet, data: Data([9]), created: ItemRecord.now(),
                modified: ItemRecord.now(), persistentID: Data(repeating: 1, count: 16), generation: 1),
            ItemRecord(
                itemClass: .genericPassword, attributes: ItemAttributes(), data: Data(),
                created: Date(timeIntervalSince1970: 0), modified: Date(timeIntervalSince1970: 1),
                persistentID: Data(repeating: 2, count: ItemRecord.persistentIDByteCount),
                generation: 1),
        ]
    }

    func expectSameMetadata(_ a: ItemRecord, _ b: ItemRecord) {
        #expect(a.itemClass == b.itemClass)
        #expect(a.attributes == b.attributes)
        #expect(a.created == b.created)
        #expect(a.modified == b.modified)
        #expect(a.persistentID == b.persistentID)
        #expect(a.generation == b.generation)
    }

    func cached(_ bytes: [UInt8], in cache: BoundedCache<ItemRecordCodec.MetadataBytes, ItemRecord>) -> ItemRecord? {
        let length = Int(UInt32(bigEndianBytes: bytes[0..<4]))
        return cache[ItemRecordCodec.MetadataBytes(bytes[4..<(4 + length)])]
    }

    @Test func anEncodedRecordIsCachedAsItsBytesDecode() throws {
        let cache = ItemRecordCodec.metadataCache(byteCapacity: 1 << 20)
        let records = try records()
        for record in records {
            let bytes = try ItemRecordCodec.encode(record, cache: cache)
            let decoded = try ItemRecordCodec.decode(bytes, cache: nil)
            let entry = try #require(cached(bytes, in: cache))
            expectSameMetadata(entry, decoded)
            expectSameMetadata(entry, record)
            #expect(entry.data.isEmpty)  // the cache never holds a secret
            #expect(try ItemRecordCodec.decode(bytes, cache: cache).data == record.data)
        }
        #expect(cache.count == records.count)
    }

    /// A date that the archive's seconds since 1970 round (one made by `Date()` can be) would read back
    /// from the cache as it was given, and from the file one ulp off: such a record is not cached.
    @Test func aRecordWhoseDatesDoNotReadBackIsNotCached() throws {
        let cache = ItemRecordCodec.metadataCache(byteCapacity: 1 << 20)
        let unstable = Date(timeIntervalSinceReferenceDate: 0.1)
        #expect(Date(timeIntervalSince1970: unstable.timeIntervalSince1970) != unstable)
        var record = try records()[0]
        record.modified = unstable
        let bytes = try ItemRecordCodec.encode(record, cache: cache)
        #expect(cached(bytes, in: cache) == nil)
        #expect(try ItemRecordCodec.decode(bytes, cache: nil).modified != unstable)
        var dated = try records()[1]
        dated.attributes.creationDate = unstable
        #expect(cached(try ItemRecordCodec.encode(dated, cache: cache), in: cache) == nil)
        #expect(cache.count == 0)
    }

    /// A caller's bytes attribute may be a slice of a larger buffer: the cached record holds its own
    /// copy, indexed from 0 as a decoded one is.
    @Test func aSlicedBytesAttributeIsCachedAsItsOwnCopy() throws {
        let cache = ItemRecordCodec.metadataCache(byteCapacity: 1 << 20)
        var record = try records()[0]
        let buffer = Data((0..<200).map { UInt8($0) })
        record.attributes.generic = buffer[100..<104]
        let entry = try #require(cached(try ItemRecordCodec.encode(record, cache: cache), in: cache))
        #expect(entry.attributes.generic == Data([100, 101, 102, 103]))
        #expect(entry.attributes.generic?.startIndex == 0)
    }

    /// A handle that wrote more items than its metadata cache holds caches its next read of any other
    /// item at once: what it wrote gives way (`BoundedCache`'s provisional entries). With the writes as
    /// ordinary entries the full cache would refuse that read, and decode it again, until it had refused
    /// as many as it holds.
    @Test func aHandleThatWroteMoreThanFitsCachesItsNextRead() throws {
        try withTemporaryVault { t in
            let probe = try t.open()
            try probe.add(.genericPassword, attributes: genp("svc", "probe"), data: Data("p"))
            let entry = probe.engine.metadataCache.byteCount
            let bounds = ItemEngine.CacheBounds(
                metadataBytes: 4 * entry, itemIDBytes: 512 << 10, attributeBytes: 64 << 20)
            let vault = try t.open().withCacheBounds(bounds)
            for i in 0..<12 {
                try vault.add(.genericPassword, attributes: genp("svc", "a\(i)"), data: Data("v\(i)"))
            }
            #expect(vault.engine.metadataCache.count == 4)
            // The read's entry is admitted (the written ones give way); refused, the four would stay.
            let early = Query.genericPassword(service: "svc", account: "a1")
            #expect(try vault.copyMatching(early, returning: .data).first?.data == Data("v1"))
            #expect(vault.engine.metadataCache.count == 1)
        }
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
