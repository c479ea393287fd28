import Foundation
import Testing
import VaultEtcd
import VaultTestSupport

@testable import Vault
@testable import VaultFleet
@testable import VaultStore

/// Long-lived handles of a fleet group: their watch brings another host's writes, their cache status
/// says when an answer came from the cache without etcd and why the watch failed, fresh reads refuse
/// that, and a watch that died (while etcd compacted its history, too) is replaced.
@Suite(.serialized) struct FleetWatchTests {

    /// Two hosts of a new fleet group: `a` on `endpointsA`, `b` on `endpointsB` (both of one cluster).
    func withTwoHosts<R>(
        a endpointsA: [String], b endpointsB: [String],
        _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup) throws -> R
    ) throws -> R {
        let group = try AccessGroup("watch-\(UUID().uuidString.prefix(8).lowercased())")
        return try FleetTestSupport.withTwoHosts(group, a: endpointsA, b: endpointsB, label: "fleet-w") { a, b in
            try body(a, b, group)
        }
    }

    /// How long `read` took to return `expected` (nil: not within `limit`), polling every millisecond.
    func timeUntil(_ expected: Data, limit: Duration = .seconds(3), _ read: () throws -> Data?) throws -> Duration? {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if try read() == expected { return ContinuousClock.now - start }
            Thread.sleep(forTimeInterval: 0.001)
        }
        return nil
    }

    /// A one-member cluster of the test's own, two hosts of a new fleet group on it and item `db` set to
    /// "current" by a; b has read it and checked once more after etcd made its watch.
    func withWatchingHost(
        _ label: String,
        _ body: (
            _ cluster: FleetTestSupport.Cluster, _ a: Vault, _ b: Vault, _ group: AccessGroup, _ db: ItemKey
        ) throws -> Void
    ) throws {
        try FleetTestSupport.withCluster(label, members: 1) { cluster in
            let endpoints = cluster.endpoints
            try withTwoHosts(a: endpoints, b: endpoints) { a, b, group in
                let db = try ItemKey(service: "db", account: "app", group: group)
                try a.set(Data("current".utf8), for: db)
                #expect(try timeUntil(Data("current".utf8)) { try b.data(for: db) } != nil)
                // Until etcd has made b's watch, reads check etcd; then one more check.
                Thread.sleep(forTimeInterval: 0.3)
                #expect(try b.data(for: db) == Data("current".utf8))
                try body(cluster, a, b, group, db)
            }
        }
    }

    @Test func aLongLivedHandleSeesAnotherHostsUpdatesThroughItsWatch() throws {
        let endpoints = try TestCluster.require()
        try withTwoHosts(a: endpoints, b: endpoints) { a, b, group in
            let db = try ItemKey(service: "db", account: "app", group: group)
            try a.set(Data("0".utf8), for: db)
            #expect(try timeUntil(Data("0".utf8)) { try b.data(for: db) } != nil)
            var times: [Duration] = []
            for round in 1...30 {
                let value = Data("value \(round)".utf8)
                try a.set(value, for: db)
                let seen = try timeUntil(value) { try b.data(for: db) }
                #expect(seen != nil, "round \(round): the update never reached the other host's handle")
                if let seen { times.append(seen) }
                Thread.sleep(forTimeInterval: 0.02)
            }
            let sorted = times.sorted()
            if !sorted.isEmpty {
                print(
                    "FIGURE fleet-watch-propagation: median \(sorted[sorted.count / 2]), max \(sorted.last!) over "
                        + "\(sorted.count) updates")
            }
            #expect(b.fleetCacheStatus(of: group)?.isStale == false)
        }
    }

    /// While its watch is live and its last check is under a second old, a handle answers without
    /// asking etcd: with the member stopped (SIGSTOP: the watch's connection stays open) a read right
    /// after a check is still answered as current; once the second has passed, the check times out
    /// and the answer is marked as from the cache.
    @Test func theWatchVouchesForTheCacheForOneSecondAfterACheck() throws {
        try withWatchingHost("vouch") { cluster, a, b, group, db in
            try cluster.pause(1)
            defer { try? cluster.resume(1) }
            // A request to the stopped member would have timed out and marked the answer stale.
            #expect(try b.data(for: db) == Data("current".utf8))
            #expect(b.fleetCacheStatus(of: group)?.isStale == false, "vouched for by the watch, no request")
            Thread.sleep(forTimeInterval: 1.1)
            #expect(try b.data(for: db) == Data("current".utf8))
            #expect(b.fleetCacheStatus(of: group)?.isStale == true, "a second later, the check could not be made")
            // The member back, a write's refresh reaches etcd: the status says so before any read.
            try cluster.resume(1)
            Thread.sleep(forTimeInterval: 1.1)
            try b.set(Data("after".utf8), for: db)
            #expect(b.fleetCacheStatus(of: group)?.isStale == false, "a write's refresh confirmed the cache")
        }
    }

    @Test func theCacheStatusSaysWhenAnAnswerCameFromTheCacheAndFreshReadsRefuseIt() throws {
        let endpoints = try TestCluster.require()
        try withTwoHosts(a: endpoints, b: endpoints) { a, b, group in
            let db = try ItemKey(service: "db", account: "app", group: group)
            try a.set(Data("cached".utf8), for: db)
            #expect(try timeUntil(Data("cached".utf8)) { try b.data(for: db) } != nil)
            let confirmed = try #require(b.fleetCacheStatus(of: group))
            #expect(!confirmed.isStale && confirmed.knownCurrentAt != nil)
            // b's settings pointed at a port with no listener, and b opened again.
            try "endpoint=http://127.0.0.1:9\n".write(
                toFile: b.path + "/groups/\(group)/fleet.conf", atomically: true, encoding: .utf8)
            let reopened = try Vault.open(at: b.path, client: b.client, fleet: .etcd())
            #expect(reopened.fleetCacheStatus(of: group) == nil, "not read yet")
            #expect(try reopened.data(for: db) == Data("cached".utf8))
            let stale = try #require(reopened.fleetCacheStatus(of: group))
            #expect(stale.isStale)
            // As of when: this machine last took a change from etcd (the mark), not later than the check.
            let since = try #require(stale.knownCurrentAt)
            #expect(since <= confirmed.knownCurrentAt! + 1_000_000_000)
            reopened.requireFreshFleetReads(true)
            let error = #expect(throws: VaultError.self) { _ = try reopened.data(for: db) }
            #expect(error?.status == .notAvailable, "\(String(describing: error))")
            #expect(error?.message.contains("fresh reads only") == true, "\(String(describing: error))")
        }
    }

    /// A watch that fails is named by the cache status until etcd makes another, and is not made again
    /// by every read: the first check a second later makes it, and the delay doubles with each failure
    /// in a row.
    @Test func aFailedWatchIsNamedAndMadeAgainAfterADelay() throws {
        #expect(
            [1, 2, 3, 6, 7, 100].map { EtcdReplica.watchRetryDelay(afterFailures: $0) }
                == [.seconds(1), .seconds(2), .seconds(4), .seconds(32), .seconds(32), .seconds(32)])
        /// Whether `condition` held within `limit`, polling every 10 ms.
        func within(_ limit: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
            let deadline = ContinuousClock.now + limit
            while ContinuousClock.now < deadline {
                if try condition() { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return try condition()
        }
        try withWatchingHost("wfail") { cluster, a, b, group, db in
            let replica = try #require(
                (b.engine.store.knownReplica(of: group.name) as? FleetGroup)?.replica)
            #expect(replica.seen.withLock { $0.watchLive }, "etcd made b's watch")
            #expect(b.fleetCacheStatus(of: group)?.watchFailure == nil)
            let killed = ContinuousClock.now
            try cluster.kill(1)
            #expect(within(.seconds(5)) { b.fleetCacheStatus(of: group)?.watchFailure != nil })
            let failure = b.fleetCacheStatus(of: group)?.watchFailure
            #expect(failure?.contains(cluster.endpoints[0]) == true, "\(String(describing: failure))")
            let (failures, retryAt) = replica.seen.withLock { ($0.watchFailures, $0.watchRetryAt) }
            #expect(failures == 1)
            let delay = try #require(retryAt) - killed
            #expect(delay >= .seconds(1) && delay < .seconds(6), "\(delay)")
            #expect(try b.data(for: db) == Data("current".utf8), "served from the cache")
            try cluster.restart(1)
            try FleetTestSupport.waitForLeader(cluster.endpoints[0])
            // Within the delay, a check that finds the cache current makes no watch; after it, one.
            replica.seen.withLock { $0.watchRetryAt = ContinuousClock.now + .seconds(60) }
            #expect(try replica.isCurrent(checkingItems: false))
            #expect(replica.seen.withLock { $0.watch == nil }, "made again within the delay")
            #expect(b.fleetCacheStatus(of: group)?.watchFailure == failure)
            replica.seen.withLock { $0.watchRetryAt = ContinuousClock.now }
            #expect(try replica.isCurrent(checkingItems: false))
            #expect(within(.seconds(10)) { replica.seen.withLock { $0.watchLive } }, "etcd made the next watch")
            #expect(b.fleetCacheStatus(of: group)?.watchFailure == nil)
            // The new watch reports a's next write: its events, not b's reads, raise the newest change.
            let newest = replica.seen.withLock { $0.newestChange }
            try a.set(Data("after".utf8), for: db)
            #expect(within(.seconds(5)) { replica.seen.withLock { $0.newestChange } > newest })
            // A read may still answer from the cache for a second after the failed one above.
            #expect(try timeUntil(Data("after".utf8)) { try b.data(for: db) } != nil)
        }
    }

    /// The member b's watch is connected to is killed; a writes through the others and etcd compacts
    /// its history past what b saw; the member comes back. b then reads a's last write (its check
    /// refreshes, and a new watch starts from the present).
    @Test func aWatchThatDiedWhileEtcdCompactedIsReplaced() throws {
        try FleetTestSupport.withCluster("watch", members: 3) { cluster in
            let endpoints = cluster.endpoints
            try withTwoHosts(a: Array(endpoints[1...]), b: [endpoints[0]]) { a, b, group in
                let db = try ItemKey(service: "db", account: "app", group: group)
                try a.set(Data("before".utf8), for: db)
                #expect(try timeUntil(Data("before".utf8)) { try b.data(for: db) } != nil)
                try cluster.kill(1)
                // The killed member may have led: until the others elect a leader, a write may fail as not
                // available (its outcome unknown), and is made again.
                for round in 1...5 {
                    let value = Data("while b's member was down \(round)".utf8)
                    let deadline = ContinuousClock.now + .seconds(10)
                    while true {
                        do {
                            try a.set(value, for: db)
                            break
                        } catch let error as VaultError where error.status == .notAvailable {
                            if ContinuousClock.now > deadline { throw error }
                        }
                    }
                }
                #expect(try b.data(for: db) == Data("before".utf8), "served from the cache")
                #expect(b.fleetCacheStatus(of: group)?.isStale == true)
                let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: Array(endpoints[1...])))
                let revision = try etcd.range(Array("/".utf8)).revision
                try etcd.compact(revision)
                try cluster.restart(1)
                try FleetTestSupport.waitForLeader(endpoints[0])
                let last = Data("while b's member was down 5".utf8)
                #expect(try timeUntil(last, limit: .seconds(10)) { try b.data(for: db) } != nil)
                #expect(b.fleetCacheStatus(of: group)?.isStale == false)
                // The new watch brings the next write too.
                try a.set(Data("after".utf8), for: db)
                #expect(try timeUntil(Data("after".utf8)) { try b.data(for: db) } != nil)
            }
        }
    }
}
