import Foundation
import Testing
import VaultCrypto

@testable import VaultEtcd

/// `EtcdClient` against a real cluster (`TestCluster`): the JSON gateway's encodings, compare-and-swap,
/// and moving on from endpoints that do not answer.
@Suite struct EtcdClientTests {
    func client(_ endpoints: [String], timeout: Int = 2000) throws -> EtcdClient {
        var configuration = try EtcdClient.Configuration(endpoints: endpoints)
        configuration.requestTimeoutMilliseconds = timeout
        return EtcdClient(configuration)
    }

    @Test func aPutIsReadBackByteForByteAndAMissingKeyIsEmpty() throws {
        let etcd = try client(try TestCluster.require())
        let prefix = TestCluster.prefix("put")
        let value = (0...255).map { UInt8($0) } + [0, 0, 10, 13]
        let revision = try etcd.put(prefix + [0xff, 0, 1], value)
        let read = try etcd.range(prefix + [0xff, 0, 1])
        #expect(read.keyValues.count == 1)
        #expect(read.keyValues.first?.value == value)
        #expect(read.keyValues.first?.key == prefix + [0xff, 0, 1])
        #expect(read.keyValues.first?.modRevision == revision)
        #expect(read.keyValues.first?.version == 1)
        #expect(!read.clusterID.isEmpty)
        // proto3 leaves `kvs` and `count` out when there is nothing: an empty answer, not an error.
        let missing = try etcd.range(prefix + Array("nothing".utf8))
        #expect(missing.keyValues.isEmpty && missing.count == 0 && missing.revision >= revision)
    }

    @Test func aPrefixRangeReturnsEveryKeyUnderItInOrder() throws {
        let etcd = try client(try TestCluster.require())
        let prefix = TestCluster.prefix("range")
        for name in ["b", "a", "c"] { try etcd.put(prefix + Array(name.utf8), Array(name.utf8)) }
        try etcd.put(Array(prefix.dropLast()) + Array("-outside".utf8), [1])
        let all = try etcd.range(prefix: prefix)
        #expect(all.keyValues.map { String(decoding: $0.value, as: UTF8.self) } == ["a", "b", "c"])
        #expect(all.count == 3)
        #expect(try etcd.range(prefix: prefix, serializable: true).count == 3)
    }

    @Test func compareAndSwapLetsOneOfTwoWritersWin() throws {
        let etcd = try client(try TestCluster.require())
        let key = TestCluster.prefix("cas") + Array("item".utf8)
        // An add: only while the key does not exist.
        let add = try etcd.transaction(
            compare: [.createRevision(key: key, equals: 0)], success: [.put(key: key, value: [1])])
        #expect(add.succeeded)
        let again = try etcd.transaction(
            compare: [.createRevision(key: key, equals: 0)], success: [.put(key: key, value: [2])],
            failure: [.range(key: key, rangeEnd: nil)])
        #expect(!again.succeeded, "proto3 leaves succeeded: false out; it must read as false")
        #expect(again.ranges.first??.keyValues.first?.value == [1])
        // An update: only at the revision it read.
        let current = try #require(try etcd.range(key).keyValues.first)
        let first = try etcd.transaction(
            compare: [.modRevision(key: key, equals: current.modRevision)], success: [.put(key: key, value: [3])])
        let second = try etcd.transaction(
            compare: [.modRevision(key: key, equals: current.modRevision)], success: [.put(key: key, value: [4])])
        #expect(first.succeeded && !second.succeeded)
        #expect(try etcd.range(key).keyValues.first?.value == [3])
        let delete = try etcd.transaction(
            compare: [.value(key: key, equals: [3])], success: [.delete(key: key, rangeEnd: nil)])
        #expect(delete.succeeded)
        #expect(try etcd.range(key).keyValues.isEmpty)
    }

    @Test func endpointsThatDoNotAnswerAreSkippedAndAllDownIsUnavailable() throws {
        let live = try TestCluster.require()
        // 127.0.0.1:9 (discard) has no listener here: the connection is refused, so even a write moves on.
        let etcd = try client(["http://127.0.0.1:9"] + live)
        let key = TestCluster.prefix("failover") + [1]
        try etcd.put(key, [7])
        #expect(try etcd.range(key).keyValues.first?.value == [7])
        let down = try client(["http://127.0.0.1:9", "http://127.0.0.1:10"], timeout: 500)
        let error = #expect(throws: EtcdError.self) { try down.put(key, [8]) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("127.0.0.1:9") == true && error?.message.contains("127.0.0.1:10") == true)
        #expect(try etcd.range(key).keyValues.first?.value == [7], "nothing was written")
    }

    @Test func badEndpointsAreRefusedBeforeAnythingIsSent() throws {
        for endpoint in [
            "127.0.0.1:2379", "ftp://127.0.0.1:2379", "http://", "http://host:1/v3?x=1", "file:///etc/passwd",
        ] {
            let error = #expect(throws: EtcdError.self) { _ = try EtcdClient.Configuration(endpoints: [endpoint]) }
            #expect(error?.code == .invalidRequest, "\(endpoint)")
            #expect(error?.message.contains(endpoint) == true)
        }
        #expect(throws: EtcdError.self) { _ = try EtcdClient.Configuration(endpoints: []) }
    }

    /// Its answer is not taken for etcd's: the endpoint counts as one that did not answer.
    @Test func aNonEtcdServerIsNotTakenForEtcd() throws {
        _ = try TestCluster.require()
        // A member's peer port speaks HTTP but not the gateway's JSON.
        let peer = try TestCluster.require()[0].replacingOccurrences(of: ":", with: ":", options: [])
        let components = peer.split(separator: ":")
        let port = try #require(Int(components.last ?? ""))
        let etcd = try client(["http://127.0.0.1:\(port + 10)"])
        let error = #expect(throws: EtcdError.self) { _ = try etcd.range([1]) }
        #expect(error?.code == .unavailable, "\(String(describing: error))")
        #expect(error?.message.contains("not etcd's JSON") == true, "\(String(describing: error))")
    }

    @Test func prefixEndsAreTheNextKeyAfterThePrefix() {
        #expect(EtcdJSON.prefixEnd([1, 2]) == [1, 3])
        #expect(EtcdJSON.prefixEnd([1, 0xff]) == [2])
        #expect(EtcdJSON.prefixEnd([0xff, 0xff]) == [0])
    }
}
