import Foundation
import Synchronization
import Testing
import Vault
import VaultFleet
import VaultTestSupport

/// No lost update across machines, in separate processes: two vaults on this machine stand for two
/// hosts sharing one fleet group, and `vault-fleet-peer` processes on each increment one item through
/// the Swift API (`Vault.modify`, an atomic read-modify-write).
@Suite(.serialized) struct FleetProcessTests {

    static let peer = FleetTestSupport.binaries.appendingPathComponent("vault-fleet-peer").path

    @Test func incrementsFromFourProcessesOnEachOfTwoHostsLoseNothing() throws {
        let endpoints = try TestCluster.require()
        let hosts = 2
        let processes = 4
        let rounds = 250
        let group = try AccessGroup("fleet")
        try FleetTestSupport.withTwoHosts(group, a: endpoints, b: endpoints, label: "fleet-proc") { first, second in
            let counter = try ItemKey(service: "counter", account: "processes", group: group)
            try first.set(Data("0".utf8), for: counter)
            #expect(FleetFaultTests.eventually(second, counter, reads: "0") == Data("0".utf8))

            let outcomes = Mutex<[(host: Int, outcome: FleetTestSupport.Outcome)]>([])
            let started = Date()
            let done = DispatchGroup()
            for (host, path) in [first.path, second.path].enumerated() {
                for _ in 0..<processes {
                    done.enter()
                    Thread {
                        defer { done.leave() }
                        let outcome: FleetTestSupport.Outcome
                        do {
                            // The peer's own alarm ends it after 400 s, and this after 420 s.
                            outcome = try FleetTestSupport.run(
                                Self.peer,
                                ["increment", path, group.rawValue, "counter", "processes", String(rounds), "400"],
                                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 420)
                        } catch {
                            outcome = FleetTestSupport.Outcome(
                                status: -1, output: "", errors: "cannot run \(Self.peer): \(error)", timedOut: false
                            )
                        }
                        outcomes.withLock { $0.append((host, outcome)) }
                    }.start()
                }
            }
            done.wait()
            let elapsed = Date().timeIntervalSince(started)
            let all = outcomes.withLock { $0 }
            #expect(all.count == hosts * processes)
            for (host, outcome) in all {
                #expect(
                    outcome.status == 0 && !outcome.timedOut
                        && outcome.output.hasPrefix("done acknowledged=\(rounds) failed=0 "),
                    "a process of host \(host): \(outcome)")
            }
            let expected = String(hosts * processes * rounds)
            let final = String(
                decoding: FleetFaultTests.eventually(first, counter, reads: expected) ?? Data(), as: UTF8.self)
            #expect(
                final == String(hosts * processes * rounds), "\(hosts) hosts × \(processes) processes × \(rounds)")
            #expect(FleetFaultTests.eventually(second, counter, reads: expected) == Data(expected.utf8))
            print(
                "FIGURE fleet-processes: \(hosts) hosts × \(processes) processes × \(rounds) increments in "
                    + "\(Int(elapsed * 1000)) ms, final \(final); per process: "
                    + all.map { $0.outcome.output.trimmingCharacters(in: .whitespacesAndNewlines) }
                    .joined(separator: "; "))
        }
    }
}
