import Foundation
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
}
