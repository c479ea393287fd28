import Foundation
import VaultSystem

/// The etcd cluster of the fleet rows: given (`VAULT_BENCH_ETCD`), or started here with
/// `scripts/etcd-cluster` and stopped by `stop()` (and by the script's watchdog once this process is
/// gone, whatever ended it).
final class BenchCluster {
    let endpoints: [String]
    private let script: String?
    private let state: String?

    var isOwn: Bool { script != nil }

    private init(endpoints: [String], script: String?, state: String?) {
        self.endpoints = endpoints
        self.script = script
        self.state = state
    }

    static func startOrGiven() throws -> BenchCluster {
        if let given = ProcessInfo.processInfo.environment["VAULT_BENCH_ETCD"], !given.isEmpty {
            return BenchCluster(endpoints: given.split(separator: ",").map(String.init), script: nil, state: nil)
        }
        let candidates = [
            FilePath(FileManager.default.currentDirectoryPath).appending("scripts/etcd-cluster").string,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("scripts/etcd-cluster").path,
        ]
        guard let script = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw BenchError(
                "--fleet needs scripts/etcd-cluster (run it from the package directory) or VAULT_BENCH_ETCD")
        }
        let pid = ProcessInfo.processInfo.processIdentifier
        let state = "/dev/shm/vault-bench-etcd-\(pid)"
        var environment = ProcessInfo.processInfo.environment
        environment["VAULT_ETCD_UNTIL_PID"] = String(pid)
        let cluster = BenchCluster(endpoints: [], script: script, state: state)
        // Ports of its own (the tests' clusters use 24000-31999): VAULT_ETCD_BASE_PORT when given, else
        // from 20000 by process id; the script refuses (3) ports something listens on, and then the next
        // ones are tried.
        let given = environment["VAULT_ETCD_BASE_PORT"].flatMap { Int($0) }
        var status: Int32 = 3
        for attempt in 0..<(given == nil ? 10 : 1) where status == 3 {
            environment["VAULT_ETCD_BASE_PORT"] = String(given ?? 20000 + (Int(pid) % 100 + attempt * 10) % 200 * 20)
            status = try ChildProcess.run(
                "/bin/bash", arguments: [script, "start", state], environment: environment.map { "\($0)=\($1)" }
            ).exitStatus
        }
        let text = String(
            decoding: FileManager.default.contents(atPath: state + "/endpoints") ?? Data(), as: UTF8.self
        ).trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, !text.isEmpty else {
            cluster.stop()
            throw BenchError(
                "`\(script) start \(state)` exited \(status) (are etcd-server and etcd-client installed? are ports "
                    + "\(environment["VAULT_ETCD_BASE_PORT"] ?? "") and on free?)")
        }
        return BenchCluster(endpoints: text.split(separator: ",").map(String.init), script: script, state: state)
    }

    /// `scripts/etcd-cluster ACTION N` for each member (pause, resume, kill).
    func members(_ action: String) throws {
        guard let script, let state else { return }
        for member in 1...3 {
            let status = try ChildProcess.run("/bin/bash", arguments: [script, action, String(member), state])
                .exitStatus
            guard status == 0 else { throw BenchError("`\(script) \(action) \(member) \(state)` exited \(status)") }
        }
    }

    /// Stops the members (whatever state they are in) and removes their data; nothing for a given cluster.
    func stop() {
        guard let script, let state else { return }
        _ = try? ChildProcess.run("/bin/bash", arguments: [script, "stop", state])
        try? FileManager.default.removeItem(atPath: state)
    }
}
