import Foundation
import Testing
import VaultSystem

/// A cluster of one test's own (`scripts/etcd-cluster` on ports nothing else uses), for tests that
/// kill, stop or restore members, which the shared cluster must not see.
enum OwnCluster {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/etcd-cluster").path

    /// `scripts/etcd-cluster arguments…` with `environment`; its exit status.
    @discardableResult
    static func run(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Int32 {
        var all = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        all["VAULT_ETCD_UNTIL_PID"] = String(ProcessInfo.processInfo.processIdentifier)
        return try ChildProcess.run(
            "/bin/bash", arguments: [script] + arguments, environment: all.map { "\($0)=\($1)" }
        )
        .exitStatus
    }

    /// A cluster of `members` started for `body` (its endpoints and state directory), stopped after it.
    static func with<R>(members: Int, label: String, _ body: (_ endpoints: [String], _ state: String) throws -> R)
        throws -> R
    {
        let pid = Int(ProcessInfo.processInfo.processIdentifier)
        let state = "/dev/shm/vault-etcd-\(label)-\(pid)"
        // The script refuses (3) ports in use: then the next ones are tried.
        var status: Int32 = 3
        for attempt in 0..<10 where status == 3 {
            let base = 28000 + (pid % 100 * 20 + attempt * 2000 + label.utf8.count * 40) % 8000
            status = try run(
                ["start", state], ["VAULT_ETCD_MEMBERS": String(members), "VAULT_ETCD_BASE_PORT": String(base)])
        }
        defer { _ = try? run(["stop", state]) }
        try #require(status == 0, "the \(label) cluster did not start: \(state)")
        let endpoints = try String(contentsOfFile: state + "/endpoints", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        return try body(endpoints, state)
    }

    /// `etcdctl arguments…` (API 3); the test fails when it does.
    static func etcdctl(_ arguments: [String]) throws {
        let status = try ChildProcess.run(
            "/usr/bin/etcdctl", arguments: arguments, environment: ["ETCDCTL_API=3", "PATH=/usr/bin:/bin"]
        ).exitStatus
        try #require(status == 0, "etcdctl \(arguments.joined(separator: " ")) failed: \(status)")
    }

    /// Waits up to 10 s for `endpoint` to be healthy.
    static func waitForHealth(_ endpoint: String) throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let status = try ChildProcess.run(
                "/usr/bin/etcdctl",
                arguments: ["--endpoints", endpoint, "--command-timeout", "1s", "endpoint", "health"],
                environment: ["ETCDCTL_API=3", "PATH=/usr/bin:/bin"]
            ).exitStatus
            if status == 0 { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        Issue.record("\(endpoint) did not become healthy within 10 s")
    }
}
