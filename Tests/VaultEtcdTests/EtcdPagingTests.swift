import Foundation
import Synchronization
import Testing

@testable import VaultEtcd

/// `EtcdClient.range(prefix:pageSize:)`: a range read in pages is the whole range, in key order, for
/// pages smaller than, equal to and larger than it.
@Suite struct EtcdPagingTests {
    @Test func aPagedRangeIsTheWholeRangeInKeyOrder() throws {
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: try TestCluster.require()))
        let prefix = TestCluster.prefix("pages")
        let names = (0..<10).map { String(format: "key-%02d", $0) }
        for name in names.shuffled() { try etcd.put(prefix + Array(name.utf8), Array(name.utf8)) }
        for pageSize in [1, 3, 10, 11] {
            let paged = try etcd.range(prefix: prefix, pageSize: pageSize)
            #expect(paged.keyValues.map { String(decoding: $0.value, as: UTF8.self) } == names, "pages of \(pageSize)")
            #expect(paged.count == 10)
        }
        let empty = try etcd.range(prefix: prefix + Array("nothing/".utf8), pageSize: 3)
        #expect(empty.keyValues.isEmpty && empty.revision > 0)
    }

    /// etcd compacts past the first page's revision before the second page is read: the read starts
    /// again at a new revision and returns the whole range as it is then (a cluster of the test's own,
    /// so that no other test's watch sees the compaction).
    @Test(.timeLimit(.minutes(1)))
    func aCompactionBetweenPagesStartsTheReadAgain() throws {
        try FleetTestSupport.withCluster("paging", members: 1) { cluster in
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: cluster.endpoints))
            let prefix = Array("/paging/".utf8)
            for n in 0..<6 { try etcd.put(prefix + Array("key-\(n)".utf8), Array("value-\(n)".utf8)) }
            let pagesRead = Mutex<[Int]>([])
            etcd.afterPage.withLock {
                $0 = { page in
                    let first = pagesRead.withLock { pages in
                        pages.append(page)
                        return pages.count == 1
                    }
                    guard first else { return }
                    // After the first attempt's first page: a new key, then the history before it discarded.
                    let added = try? etcd.put(prefix + Array("key-6".utf8), Array("value-6".utf8))
                    if let added { try? etcd.compact(added) }
                }
            }
            let paged = try etcd.range(prefix: prefix, pageSize: 2)
            #expect(paged.keyValues.map { String(decoding: $0.value, as: UTF8.self) } == (0...6).map { "value-\($0)" })
            // One page of the first attempt, then the four pages of the second.
            #expect(pagesRead.withLock { $0 } == [1, 1, 2, 3, 4], "pages read: \(pagesRead.withLock { $0 })")
        }
    }

    /// Pages that grow: after the first, each takes twice as many keys as the one before while the values
    /// are small (up to the maximum), and a page whose answer is larger than the client takes is read
    /// again at the first page's size, with no page growing after it.
    @Test func pagesGrowWithSmallValuesAndShrinkAfterAnAnswerTooLarge() throws {
        var configuration = try EtcdClient.Configuration(endpoints: try TestCluster.require())
        configuration.maximumAnswerByteCount = 400 << 10
        let etcd = EtcdClient(configuration)
        let prefix = TestCluster.prefix("growing")
        var names = (0..<60).map { String(format: "key-%02d", $0) }
        for name in names { try etcd.put(prefix + Array(name.utf8), Array(name.utf8)) }
        let pagesRead = Mutex(0)
        etcd.afterPage.withLock { $0 = { page in pagesRead.withLock { $0 = page } } }
        let small = try etcd.range(prefix: prefix, pageSize: 2, maximumPageSize: 50)
        #expect(small.keyValues.map { String(decoding: $0.value, as: UTF8.self) } == names)
        #expect(pagesRead.withLock { $0 } == 5, "2, 4, 8, 16 and 30 keys")
        // Three values of 150 KiB (200 KiB in base64: two of them pass the 400 KiB the client takes).
        let large = (0..<3).map { String(format: "key-60-large-%d", $0) }
        for name in large { try etcd.put(prefix + Array(name.utf8), Array(repeating: 0x61, count: 150 << 10)) }
        names += large
        let mixed = try etcd.range(prefix: prefix, pageSize: 1, maximumPageSize: 50)
        #expect(mixed.keyValues.map(\.key) == names.map { prefix + Array($0.utf8) })
        // 1, 2, 4, 8 and 16 keys (small values), then a page of 32 with the large ones, too large: read again
        // a key a page.
        #expect(pagesRead.withLock { $0 } == 5 + 32)
        let refused = #expect(throws: EtcdError.self) { _ = try etcd.range(prefix: prefix, pageSize: 3) }
        #expect(refused?.code == .responseTooLarge, "pages of 3 keys hold two large values")
    }
}
