import Foundation
import Synchronization
import Testing
import Vault
import VaultTestSupport

@testable import VaultEtcd

#if canImport(Glibc)
    import Glibc
#endif

/// A listener that takes connections (the kernel completes them) and never answers: a member that is
/// stopped or partitioned behind a host that is up.
final class SilentEndpoint {
    let socket: Int32
    let endpoint: String

    init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.socket = socket
        var address = FleetTestSupport.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && listen(socket, 64) == 0
                    && getsockname(socket, pointer, &length) == 0
            }
        }
        guard socket >= 0, bound else { throw EtcdError(.invalidRequest, "cannot listen on 127.0.0.1") }
        endpoint = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
    }

    deinit { close(socket) }
}

/// Runs `body` on `count` threads at once (not `concurrentPerform`, which runs as many as there are
/// cores) and returns when all have ended.
func onThreads(_ count: Int, _ body: @escaping @Sendable () -> Void) {
    let done = DispatchSemaphore(value: 0)
    for _ in 0..<count {
        Thread {
            body()
            done.signal()
        }.start()
    }
    for _ in 0..<count { done.wait() }
}

/// A read waits for etcd one deadline in all (`readDeadlineMilliseconds`), whatever the endpoints do
/// and however many threads read: members that accept connections but never answer made a CLI get
/// take 6 s and a read of 4 threads up to 24 s.
@Suite struct EtcdDeadlineTests {
    /// The slack a loaded test machine gets over a deadline before a wait counts as not bounded by it.
    static let slack = Duration.milliseconds(700)

    func client(_ endpoints: [String], deadline: Int = 1000) throws -> EtcdClient {
        var configuration = try EtcdClient.Configuration(endpoints: endpoints)
        configuration.readDeadlineMilliseconds = deadline
        return EtcdClient(configuration)
    }

    @Test func aReadOfEndpointsThatNeverAnswerEndsAtTheDeadline() throws {
        let silent = try (0..<3).map { _ in try SilentEndpoint() }
        let etcd = try client(silent.map(\.endpoint))
        let started = ContinuousClock.now
        let error = #expect(throws: EtcdError.self) { _ = try etcd.range([1]) }
        let took = ContinuousClock.now - started
        #expect(error?.code == .unavailable, "\(String(describing: error))")
        for endpoint in silent { #expect(error?.message.contains(endpoint.endpoint) == true, "names each endpoint") }
        #expect(took < .milliseconds(1000) + Self.slack, "a read waits one deadline, not a time limit each: \(took)")
    }

    @Test func threadsReadingAtOnceDoNotWaitForEachOther() throws {
        let silent = try (0..<3).map { _ in try SilentEndpoint() }
        let etcd = try client(silent.map(\.endpoint))
        let longest = Mutex(Duration.zero)
        let started = ContinuousClock.now
        onThreads(4) {
            let began = ContinuousClock.now
            _ = try? etcd.range([1])
            let took = ContinuousClock.now - began
            longest.withLock { $0 = max($0, took) }
        }
        let all = ContinuousClock.now - started
        let slowest = longest.withLock { $0 }
        #expect(slowest < .milliseconds(1000) + Self.slack, "each thread's read: \(slowest)")
        #expect(all < .milliseconds(1000) + Self.slack, "4 reads at once, not one after another: \(all)")
    }

    @Test func anEndpointThatNeverAnswersLeavesTimeForTheNext() throws {
        let silent = try SilentEndpoint()
        let member = try FakeGateway([
            "/v3/kv/range": #"{\#(FakeGatewayTests.header),"kvs":[\#(FakeGatewayTests.entry)],"count":"1"}"#
        ])
        let etcd = try client([silent.endpoint, member.endpoint])
        #expect(try etcd.range([1]).keyValues.map(\.key) == [Array("a".utf8)])
    }

    /// Through the vault: a CLI get whose group's endpoints never answer answers from the cache after
    /// the deadline (exit 0, or 10 with --report-stale), and 4 threads of a long-lived handle read at
    /// once within it.
    @Test func aFleetReadAnswersFromTheCacheAfterOneDeadline() throws {
        let endpoints = try TestCluster.require()
        let group = try AccessGroup("deadline-\(UUID().uuidString.prefix(8).lowercased())")
        let key = try ItemKey(service: "db", account: "app", group: group)
        try FleetTestSupport.withTwoHosts(group, a: endpoints, b: endpoints, label: "fleet-deadline") { a, b in
            try a.set(Data("cached".utf8), for: key)
            // Asked of etcd now, not vouched for by b's watch (which may not have reported a's write yet).
            b.requireFreshFleetReads(true)
            #expect(try b.data(for: key) == Data("cached".utf8))
            b.requireFreshFleetReads(false)
            let silent = try (0..<3).map { _ in try SilentEndpoint() }
            try (silent.map { "endpoint=\($0.endpoint)\n" }.joined()).write(
                toFile: b.path + "/groups/\(group.rawValue)/fleet.conf", atomically: true, encoding: .utf8)
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            func get(_ options: [String]) throws -> (FleetTestSupport.Outcome, Duration) {
                let started = ContinuousClock.now
                let outcome = try FleetTestSupport.run(
                    vault, ["--vault", b.path, "--group", group.rawValue, "get"] + options + ["db", "app"],
                    input: "", environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
                return (outcome, ContinuousClock.now - started)
            }
            let (plain, took) = try get([])
            #expect(plain.status == 0 && plain.output == "cached", "\(plain)")
            #expect(plain.errors.contains("answered from this machine's cache"), "\(plain.errors)")
            // A process's start and the group's open come on top of the deadline.
            #expect(took < .milliseconds(1000) + Self.slack + .milliseconds(500), "\(took)")
            let (reported, _) = try get(["--report-stale"])
            #expect(reported.status == 10 && reported.output == "cached", "\(reported)")
            let (fresh, _) = try get(["--fresh", "--report-stale"])
            #expect(fresh.status == 9 && fresh.output.isEmpty, "\(fresh)")
            let listed = try FleetTestSupport.run(
                vault, ["--vault", b.path, "--group", group.rawValue, "ls", "--report-stale"], input: "",
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            #expect(listed.status == 10 && listed.output.contains("app"), "\(listed)")

            let reopened = try Vault.open(at: b.path, client: b.client, fleet: .etcd())
            let answers = Mutex(0)
            let started = ContinuousClock.now
            onThreads(4) {
                if (try? reopened.data(for: key)) == Data("cached".utf8) { answers.withLock { $0 += 1 } }
            }
            let all = ContinuousClock.now - started
            #expect(answers.withLock { $0 } == 4)
            #expect(reopened.fleetCacheStatus(of: group)?.isStale == true)
            #expect(all < .milliseconds(1000) + Self.slack, "4 threads' reads at once: \(all)")
        }
    }
}
