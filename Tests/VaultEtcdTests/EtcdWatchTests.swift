import Foundation
import Synchronization
import Testing
import VaultSystem

@testable import VaultEtcd

/// `EtcdWatch` against the shared cluster: events in order, cancellation; a compacted start on a
/// cluster of its own.
@Suite struct EtcdWatchTests {
    final class Collected: Sendable {
        let events = Mutex<[EtcdEvent]>([])
        let end = Mutex<EtcdWatchEnd?>(nil)

        func waitFor(_ condition: (Collected) -> Bool, seconds: Double = 5) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if condition(self) { return true }
                Thread.sleep(forTimeInterval: 0.01)
            }
            return condition(self)
        }
    }

    func watch(_ etcd: EtcdClient, _ prefix: [UInt8], from revision: Int64, into collected: Collected) -> EtcdWatch {
        EtcdWatch(
            client: etcd, prefix: prefix, fromRevision: revision,
            onEvents: { events, _ in collected.events.withLock { $0 += events } },
            onEnd: { end in collected.end.withLock { $0 = end } })
    }

    @Test func aWatchReportsPutsAndDeletesInOrderAndEndsWhenCancelled() throws {
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: try TestCluster.require()))
        let prefix = TestCluster.prefix("watch")
        let start = try etcd.range(prefix: prefix).revision + 1
        var collected = Collected()
        var watch = watch(etcd, prefix, from: start, into: collected)
        let began = Date()
        try etcd.put(prefix + [1], [10])
        try etcd.put(prefix + [2], [20])
        try etcd.put(Array(prefix.dropLast()) + Array("-outside".utf8), [0])
        _ = try etcd.transaction(compare: [], success: [.delete(key: prefix + [1], rangeEnd: nil)])
        // A watch that failed (its connection, on a loaded machine) is started again from the same
        // revision, as its contract says; the events are the same.
        for _ in 0..<3 {
            _ = collected.waitFor(
                { $0.events.withLock { $0.count } >= 3 || $0.end.withLock { $0 } != nil }, seconds: 10)
            guard case .failed(let reason) = collected.end.withLock({ $0 }) else { break }
            print("etcd-watch: the watch failed (\(reason)); watching again from revision \(start)")
            collected = Collected()
            watch = self.watch(etcd, prefix, from: start, into: collected)
        }
        #expect(
            collected.waitFor { $0.events.withLock { $0.count } >= 3 },
            "\(collected.events.withLock { $0 }), ended: \(String(describing: collected.end.withLock { $0 }))")
        print("FIGURE etcd-watch: 3 events seen \(Int(Date().timeIntervalSince(began) * 1000)) ms after the first put")
        let events = collected.events.withLock { $0 }
        #expect(events.count == 3, "the key outside the prefix is not reported")
        guard events.count == 3 else { return }
        if case .put(let first) = events[0] {
            #expect(first.key == prefix + [1] && first.value == [10])
        } else {
            Issue.record("first event \(events[0])")
        }
        if case .put(let second) = events[1] {
            #expect(second.key == prefix + [2])
        } else {
            Issue.record("second event \(events[1])")
        }
        if case .delete(let key, _) = events[2] {
            #expect(key == prefix + [1])
        } else {
            Issue.record("third event \(events[2])")
        }
        watch.cancel()
        #expect(collected.waitFor({ $0.end.withLock { $0 } != nil }, seconds: 3), "the watch did not end")
        #expect(collected.end.withLock { $0 } == .cancelled)
    }

    /// On a cluster of its own: a compaction of the shared one ends every other test's watch that
    /// started below it (this suite's first test saw `compacted` in a CI run).
    @Test(.timeLimit(.minutes(1)))
    func aWatchFromACompactedRevisionSaysSo() throws {
        try FleetTestSupport.withCluster("compacted", members: 1) { cluster in
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: cluster.endpoints))
            let prefix = Array("/compacted/".utf8)
            let first = try etcd.put(prefix + [1], [1])
            let last = try etcd.put(prefix + [1], [2])
            try etcd.compact(last)
            let collected = Collected()
            _ = watch(etcd, prefix, from: first, into: collected)
            #expect(collected.waitFor { $0.end.withLock { $0 } != nil }, "the watch did not end")
            guard case .compacted(let revision) = collected.end.withLock({ $0 }) else {
                Issue.record("ended with \(String(describing: collected.end.withLock { $0 }))")
                return
            }
            #expect(revision >= last)
        }
    }

    @Test func aWatchOnAnEndpointThatIsDownFails() throws {
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: ["http://127.0.0.1:9"]))
        let collected = Collected()
        _ = watch(etcd, TestCluster.prefix("down"), from: 0, into: collected)
        #expect(collected.waitFor { $0.end.withLock { $0 } != nil }, "the watch did not end")
        guard case .failed(let message) = collected.end.withLock({ $0 }) else {
            Issue.record("ended with \(String(describing: collected.end.withLock { $0 }))")
            return
        }
        #expect(message.contains("127.0.0.1:9"))
    }

    /// A watch whose thread cannot be made (a thread limit) ends failed, saying why, and reports it from
    /// another thread: the caller may hold the lock its `onEnd` takes.
    @Test func aWatchWhoseThreadCannotStartEndsFromAnotherThread() throws {
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: ["http://127.0.0.1:9"]))
        let collected = Collected()
        let caller = pthread_self()
        let endedOnCaller = Mutex<Bool?>(nil)
        let watch = FaultInjection.withPlan(FaultPlan(.startThread, occurrence: 1, effect: .fail(.wouldBlock))) {
            EtcdWatch(
                client: etcd, prefix: TestCluster.prefix("no-thread"), fromRevision: 0, onEvents: { _, _ in },
                onEnd: { end in
                    endedOnCaller.withLock { $0 = pthread_equal(pthread_self(), caller) != 0 }
                    collected.end.withLock { $0 = end }
                })
        }
        #expect(collected.waitFor { $0.end.withLock { $0 } != nil }, "the watch did not end")
        #expect(endedOnCaller.withLock { $0 } == false)
        guard case .failed(let message) = watch.end else {
            Issue.record("ended with \(String(describing: watch.end))")
            return
        }
        #expect(message.contains("cannot start the watch's thread"))
    }
}
