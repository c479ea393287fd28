import Foundation
import VaultSystem

/// The etcd cluster every test of the process uses: `VAULT_TEST_ETCD` (comma-separated endpoints, set
/// by `.ci/run`, which starts a 3-member cluster with `scripts/etcd-cluster start`), else one this test
/// process starts on ports of its own with the same script, which stops it when the process is gone.
/// One per process, whichever test target asks first (the test targets share one test binary).
package enum EtcdTestCluster {
    /// The endpoints, or why there is no cluster; computed once.
    package static let endpoints: Result<[String], ClusterError> = {
        if let given = ProcessInfo.processInfo.environment["VAULT_TEST_ETCD"], !given.isEmpty {
            return .success(given.split(separator: ",").map(String.init))
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/etcd-cluster").path
        let pid = ProcessInfo.processInfo.processIdentifier
        let state = "/dev/shm/vault-etcd-test-\(pid)"
        // posix_spawn and waitpid (not Foundation's Process, whose wait did not return here once the
        // members it started in the background outlived the script); the endpoints come back in a file.
        var environment = ProcessInfo.processInfo.environment
        environment["VAULT_ETCD_UNTIL_PID"] = String(pid)
        // The script refuses (3) ports something listens on already: then the next ones are tried.
        var status: Int32 = 3
        for attempt in 0..<10 where status == 3 {
            environment["VAULT_ETCD_BASE_PORT"] = String(24000 + (Int(pid) % 400 * 20 + attempt * 800) % 8000)
            do {
                status = try ChildProcess.run(
                    "/bin/bash", arguments: [script, "start", state], environment: environment.map { "\($0)=\($1)" }
                ).exitStatus
            } catch {
                return .failure(ClusterError(message: "cannot run \(script): \(error)"))
            }
        }
        let data = FileManager.default.contents(atPath: state + "/endpoints") ?? Data()
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, !text.isEmpty else {
            return .failure(
                ClusterError(
                    message: "no etcd cluster: set VAULT_TEST_ETCD, or install etcd-server and etcd-client (`\(script) "
                        + "start` failed with \(status))"))
        }
        return .success(text.split(separator: ",").map(String.init))
    }()

    /// Why there is no cluster.
    package struct ClusterError: Error, CustomStringConvertible {
        /// What failed, and how to give the tests a cluster.
        package let message: String
        /// The message.
        package var description: String { message }
    }

    /// The endpoints, or the test fails saying why there is no cluster.
    package static func require() throws -> [String] {
        try endpoints.get()
    }
}
