import Foundation
import Testing
import VaultTestSupport

@testable import Vault

/// The handle's caches are bounded in bytes (`BoundedCache`), and a vault whose caches are full
/// still answers every read correctly.
@Suite struct BoundedCacheTests {
    /// A cache of `Int` keys whose values each own `heap` bytes.
    func cache(entries: Int, heap: Int) -> BoundedCache<Int, Int> {
        let capacity = entries * BoundedCache<Int, Int>.cost(heap: heap)
        return BoundedCache(byteCapacity: capacity) { _, _ in heap }
    }

    @Test func holdsNoMoreBytesThanItsCapacity() {
        let small = cache(entries: 10, heap: 100)
        for i in 0..<10 { small.insert(i, for: i) }
        #expect(small.count == 10)
        #expect(small.byteCount == small.byteCapacity)
        small.insert(10, for: 10)
        #expect(small.count == 10)
        #expect(small[10] == nil)
        #expect(small.byteCount <= small.byteCapacity)
        // The same capacity in bytes holds fewer entries that own more heap.
        let large = BoundedCache<Int, Int>(byteCapacity: small.byteCapacity) { _, _ in 1000 }
        for i in 0..<10 { large.insert(i, for: i) }
        #expect(large.count < 10)
        #expect(large.count == small.byteCapacity / BoundedCache<Int, Int>.cost(heap: 1000))
        #expect(large.byteCount <= large.byteCapacity)
    }

    @Test func anEntryLargerThanTheCacheIsNeverAdmitted() {
        let tiny = BoundedCache<Int, Int>(byteCapacity: 100) { _, _ in 1000 }
        for i in 0..<5 { tiny.insert(i, for: i) }
        #expect(tiny.count == 0)
        #expect(tiny.byteCount == 0)
    }

    @Test func aFullCacheKeepsWhatItHolds() {
        let full = cache(entries: 4, heap: 0)
        for i in 0..<4 { full.insert(i * 10, for: i) }
        // Up to as many refusals as entries, the entries stay: a scan over more items than fit keeps
        // hitting those that fit.
        for i in 4..<8 { full.insert(i * 10, for: i) }
        for i in 0..<4 { #expect(full[i] == i * 10) }
        for i in 4..<8 { #expect(full[i] == nil) }
        // Replacing a held entry's value needs no room.
        full.insert(7, for: 2)
        #expect(full[2] == 7)
        #expect(full.count == 4)
    }

    @Test func isEmptiedOnceItRefusedAsManyEntriesAsItHolds() {
        let full = cache(entries: 4, heap: 0)
        for i in 0..<4 { full.insert(i, for: i) }
        for i in 4..<8 { full.insert(i, for: i) }  // four refusals
        #expect(full.count == 4)
        full.insert(8, for: 8)  // the fifth: the old entries go, the new one stays
        #expect(full.count == 1)
        #expect(full[8] == 8)
        #expect(full[0] == nil)
        #expect(full.byteCount == BoundedCache<Int, Int>.cost(heap: 0))
    }

    /// What a handle writes goes in provisionally: only into room, never a refusal, and out as soon as
    /// another entry needs the room, so that a handle's reads after many writes are admitted at once.
    @Test func provisionalEntriesGiveWayToOthers() {
        let cost = BoundedCache<Int, Int>.cost(heap: 0)
        let full = cache(entries: 4, heap: 0)
        for i in 0..<4 { full.insert(i, for: i, provisional: true) }
        #expect(full.count == 4)
        // More writes than fit: the provisional entries make room for the newest.
        full.insert(4, for: 4, provisional: true)
        #expect(full.count == 1)
        #expect(full[4] == 4)
        for i in 5..<8 { full.insert(i, for: i, provisional: true) }
        #expect(full.count == 4)
        // An ordinary entry that does not fit takes the room of every provisional one, at once.
        full.insert(100, for: 100)
        #expect(full.count == 1)
        #expect(full[100] == 100)
        #expect(full.byteCount == cost)
        // Provisional entries never displace ordinary ones, and are no refusals: after twenty of them
        // the next ordinary refusal is the first, which does not empty the cache.
        for i in 101..<104 { full.insert(i, for: i) }
        for i in 0..<20 { full.insert(i, for: 200 + i, provisional: true) }
        full.insert(300, for: 300)
        #expect(full.count == 4)
        for i in 100..<104 { #expect(full[i] == i) }
        #expect(full.byteCount == 4 * cost)

        // Removing a provisional entry by its key counts its bytes out.
        let kept = cache(entries: 4, heap: 0)
        kept.insert(1, for: 1, provisional: true)
        kept.insert(2, for: 2)
        kept.removeAll { $0 == 1 }
        #expect(kept.byteCount == cost)
        for i in 3..<7 { kept.insert(i, for: i) }
        #expect(kept.count == 4)
        #expect(kept.byteCount == 4 * cost)
        // Provisional entries stay when dropping them would not let the new entry in.
        let sized = BoundedCache<Int, Int>(byteCapacity: 4 * cost) { _, value in value }
        for i in 0..<3 { sized.insert(0, for: i) }
        sized.insert(0, for: 10, provisional: true)
        sized.insert(2 * cost, for: 20)  // needs more room than the provisional entry frees
        sized.insert(100 * cost, for: 30)  // larger than the cache
        #expect(sized[10] == 0)
        #expect(sized.count == 4)
        sized.insert(0, for: 40)  // fits once the provisional entry goes
        #expect(sized[10] == nil)
        #expect(sized[40] == 0)
        // A write of a key that a read put there leaves it ordinary: it does not give way.
        sized.insert(0, for: 0, provisional: true)
        sized.insert(0, for: 60)
        #expect(sized[0] == 0)
        #expect(sized[60] == nil)
        #expect(sized.byteCount == 4 * cost)
        // An ordinary value for a provisional key makes it ordinary.
        let promoted = cache(entries: 2, heap: 0)
        promoted.insert(1, for: 1, provisional: true)
        promoted.insert(10, for: 1)
        promoted.insert(2, for: 2)
        promoted.insert(3, for: 3)
        #expect(promoted[1] == 10)
        #expect(promoted[2] == 2)
    }

    @Test func aNewValueThatDoesNotFitDropsTheOldOne() {
        let full = BoundedCache<Int, Int>(byteCapacity: 2 * BoundedCache<Int, Int>.cost(heap: 100)) { _, value in value
        }
        full.insert(100, for: 1)
        full.insert(100, for: 2)
        full.insert(5000, for: 1)
        #expect(full[1] == nil)
        #expect(full[2] == 100)
        #expect(full.byteCount == BoundedCache<Int, Int>.cost(heap: 100))
    }

    @Test func aCacheKeptCleanByItsOwnerIsNeverEmptiedWhenFull() {
        let capacity = 4 * BoundedCache<Int, Int>.cost(heap: 0)
        let kept = BoundedCache<Int, Int>(byteCapacity: capacity, emptiesWhenRefusing: false) { _, _ in 0 }
        for i in 0..<4 { kept.insert(i, for: i) }
        for i in 4..<100 { kept.insert(i, for: i) }
        #expect(kept.count == 4)
        for i in 0..<4 { #expect(kept[i] == i) }
        kept.removeAll { $0 % 2 == 0 }
        #expect(kept.count == 2)
        #expect(kept.byteCount == 2 * BoundedCache<Int, Int>.cost(heap: 0))
        kept.insert(50, for: 50)
        #expect(kept[50] == 50)
    }

    /// A scan drops the cached attributes of items that are gone, so they do not keep the room.
    @Test func aScanForgetsItemsThatAreGone() throws {
        try withTemporaryVault { t in
            let writer = try t.open()
            let reader = try t.open()
            for i in 0..<10 {
                try writer.add(.genericPassword, attributes: genp("svc", "a\(i)"), data: Data("v\(i)"))
            }
            let all = Query.genericPassword(service: "svc", limit: .all)
            // More than a tick of the change-time clock: only settled files are cached.
            Thread.sleep(forTimeInterval: 0.05)
            #expect(try reader.copyMatching(all).count == 10)
            #expect(reader.engine.attributeCache.count == 10)
            for i in 0..<4 { try writer.delete(.genericPassword(service: "svc", account: "a\(i)")) }
            #expect(try reader.copyMatching(all).count == 6)
            #expect(reader.engine.attributeCache.count == 6)
        }
    }

    @Test func recordCostsCountTheirHeap() {
        let short = ItemRecord(
            itemClass: .genericPassword, attributes: ItemAttributes(service: "s", account: "a"), data: Data(),
            created: Date(), modified: Date(), persistentID: Data(repeating: 1, count: 16), generation: 1)
        var long = short
        long.attributes.comment = String(repeating: "c", count: 10_000)
        #expect(long.heapByteEstimate >= short.heapByteEstimate + 10_000)
        // The attribute box is counted even when shared, so the bound errs on the high side: the compact
        // box of a service and an account is an object of 64 bytes, a box of every attribute more.
        #expect(short.heapByteEstimate >= 64)
        #expect(long.heapByteEstimate >= MemoryLayout<ItemAttributes>.stride + 10_000)
    }

    /// The compact attribute box (service, account, accessibility, synchronizable) gives back exactly
    /// what it was given, and so does the full one when anything else is set.
    @Test func recordsGiveBackTheirAttributes() {
        var compact = ItemAttributes(service: "svc", account: "acct")
        compact.accessible = .whenUnlocked
        compact.synchronizable = true
        var full = compact
        full.label = "label"
        full.generic = Data([1, 2, 3])
        full.port = 443
        full.dataTypedKeys = ["acct"]
        for attributes in [ItemAttributes(), ItemAttributes(service: "s", account: nil), compact, full] {
            let record = ItemRecord(
                itemClass: .genericPassword, attributes: attributes, data: Data(), created: Date(), modified: Date(),
                persistentID: Data(repeating: 1, count: 16), generation: 1)
            #expect(record.attributes == attributes)
            var changed = record
            changed.attributes.comment = "comment"
            #expect(changed.attributes.comment == "comment")
            #expect(record.attributes == attributes)
        }
    }

    /// Caches far too small for the vault (a few entries each): gets and queries stay correct,
    /// and writes through another handle show at once.
    @Test func readsStayCorrectWhenTheCachesAreFull() throws {
        try withTemporaryVault { t in
            let writer = try t.open()
            let bounds = ItemEngine.CacheBounds(metadataBytes: 4096, itemIDBytes: 2048, attributeBytes: 8192)
            let reader = try t.open().withCacheBounds(bounds)
            for i in 0..<60 {
                try writer.add(.genericPassword, attributes: genp("svc", "a\(i)"), data: Data("v\(i)"))
            }
            let all = Query.genericPassword(service: "svc", limit: .all)
            for _ in 0..<3 {
                let found = try reader.copyMatching(all)
                #expect(found.count == 60)
                #expect(Set(found.compactMap(\.attributes.account)) == Set((0..<60).map { "a\($0)" }))
                for i in stride(from: 0, to: 60, by: 7) {
                    let got = try reader.copyMatching(
                        .genericPassword(service: "svc", account: "a\(i)"), returning: .data)
                    #expect(got.first?.data == Data("v\(i)"))
                }
            }
            #expect(reader.engine.attributeCache.byteCount <= 8192)
            #expect(reader.engine.metadataCache.byteCount <= 4096)
            #expect(reader.engine.itemIDCache.byteCount <= 2048)
            #expect(reader.engine.attributeCache.count < 60)
            var changes = ItemChanges(data: Data("changed"))
            changes.attributes.label = "relabelled"
            try writer.update(.genericPassword(service: "svc", account: "a5"), with: changes)
            try writer.delete(.genericPassword(service: "svc", account: "a6"))
            let after = try reader.copyMatching(all)
            #expect(after.count == 59)
            #expect(after.first { $0.attributes.account == "a5" }?.attributes.label == "relabelled")
            #expect(!after.contains { $0.attributes.account == "a6" })
            let got = try reader.copyMatching(.genericPassword(service: "svc", account: "a5"), returning: .data)
            #expect(got.first?.data == Data("changed"))
        }
    }
}
