import Foundation
import Synchronization
import Testing
import Vault
import VaultEtcd
import VaultStore
import VaultSystem
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// What the fleet fault, process and security tests share: clusters of a test's own (on ports
/// checked free, stopped whatever happens), processes run with a time limit and their output in files,
/// etcdctl, and the search of etcd's output and data for plaintext.
enum FleetTestSupport {
    static let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/etcd-cluster").path

    /// The next candidate base port: the clusters that tests start for themselves use 45300 + 20 k
    /// (clients BASE+1…3, peers BASE+11…13).
    static let nextBase = Mutex(0)

    /// Where fleet group `group` of `vault` keeps its keys in etcd (`/vault/v2/<group id hex>/`), from the
    /// id in its exported key: its registration does not name it.
    static func etcdRoot(of group: AccessGroup, in vault: Vault) throws -> [UInt8] {
        let key = try ReplicatedGroupKey(
            exported: try vault.exportFleetGroupKey(group).unprotectedCopy(), group: try GroupName(group.rawValue))
        return Array("/vault/v2/\(Hex.encode(key.groupID))/".utf8)
    }

    /// 127.0.0.1:`port` (0: any port) as a socket address.
    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Whether nothing listens on, or holds, 127.0.0.1:`port`. With SO_REUSEADDR, as etcd binds: a
    /// connection of an earlier cluster that waits out its TIME_WAIT on the port does not count (it
    /// would not stop etcd, and stopped clusters leave many).
    static func portIsFree(_ port: Int) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var reuse: Int32 = 1
        guard setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size)) == 0 else {
            return false
        }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A base port whose six cluster ports are free now.
    static func freeBase() throws -> Int {
        for _ in 0..<100 {
            let base = nextBase.withLock { value in
                defer { value = (value + 1) % 100 }
                return 45300 + value * 20
            }
            if [1, 2, 3, 11, 12, 13].allSatisfy({ portIsFree(base + $0) }) { return base }
        }
        throw ClusterFailure(message: "no free ports for an etcd cluster from 45300 on")
    }

    struct ClusterFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// A cluster of one test's own, started by `scripts/etcd-cluster` in `state` (under /dev/shm).
    struct Cluster {
        let state: String
        let endpoints: [String]
        /// etcdctl's TLS settings for an https cluster (`ETCDCTL_CACERT`, …).
        let etcdctlEnvironment: [String: String]

        /// Runs `scripts/etcd-cluster arguments… STATE`; its exit status.
        @discardableResult
        func run(_ arguments: [String]) throws -> Int32 {
            try FleetTestSupport.clusterScript(arguments + [state])
        }

        /// SIGKILLs member `n` (1-3).
        func kill(_ n: Int) throws { try run(["kill", String(n)]) }
        /// SIGSTOPs member `n`.
        func pause(_ n: Int) throws { try run(["pause", String(n)]) }
        /// SIGCONTs member `n`.
        func resume(_ n: Int) throws { try run(["resume", String(n)]) }
        /// Starts member `n` again on its data.
        func restart(_ n: Int) throws { try run(["restart", String(n)]) }

        /// `etcdctl --endpoints ENDPOINTS arguments…`: its exit status and standard output (raw bytes).
        func etcdctl(_ arguments: [String], endpoints: [String]? = nil) throws -> (status: Int32, output: [UInt8]) {
            let output = NSTemporaryDirectory() + "/fleet-etcdctl-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: output) }
            var environment = ProcessInfo.processInfo.environment.merging(etcdctlEnvironment) { $1 }
            environment["ETCDCTL_API"] = "3"
            let status = try ChildProcess.run(
                "/bin/bash",
                arguments: [
                    "-c", "out=\"$1\"; shift; exec etcdctl --command-timeout 3s \"$@\" >\"$out\"", "etcdctl", output,
                    "--endpoints", (endpoints ?? self.endpoints).joined(separator: ","),
                ] + arguments,
                environment: environment.map { "\($0)=\($1)" }
            ).exitStatus
            return (status, Array(FileManager.default.contents(atPath: output) ?? Data()))
        }

        /// The member (1-3) that is the leader now, by `etcdctl endpoint status`; nil when none says so.
        func leader() throws -> Int? {
            let status = try etcdctl(["endpoint", "status", "-w", "json"])
            guard status.status == 0,
                let entries = try? JSONSerialization.jsonObject(with: Data(status.output)) as? [[String: Any]]
            else { return nil }
            for entry in entries {
                guard let endpoint = entry["Endpoint"] as? String, let body = entry["Status"] as? [String: Any],
                    let header = body["header"] as? [String: Any], let member = header["member_id"] as? NSNumber,
                    let leader = body["leader"] as? NSNumber, member == leader,
                    let index = endpoints.firstIndex(of: endpoint)
                else { continue }
                return index + 1
            }
            return nil
        }

        /// Every file under the cluster's state directory (each member's data directory, `mN.data`,
        /// with its write-ahead log and snapshots, and the logs), with its bytes.
        func dataFiles() -> [(path: String, bytes: [UInt8])] {
            var files: [(String, [UInt8])] = []
            guard let walker = FileManager.default.enumerator(atPath: state) else { return [] }
            while let relative = walker.nextObject() as? String {
                let path = state + "/" + relative
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
                else { continue }
                files.append((path, Array(FileManager.default.contents(atPath: path) ?? Data())))
            }
            return files
        }

        /// Records an issue for each of `strings` found in `etcdctl get --prefix /vault` (keys and
        /// values, raw) or in any file of the members' data (a string absent there covers every string it
        /// begins: pass a distinctive prefix of many). The group registration's plaintext header is
        /// searched as well and must be found in both, so that a search that cannot see is no pass.
        /// Returns how many bytes were searched.
        @discardableResult
        func expectNoPlaintext(_ strings: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
            let dump = try etcdctl(["get", "--prefix", "/vault"])
            #expect(dump.status == 0, "etcdctl get --prefix /vault failed", sourceLocation: sourceLocation)
            let files = dataFiles()
            let logs = files.filter { $0.path.contains(".data/member/wal/") }
            let control = Array("vault fleet group v1".utf8)
            #expect(
                FleetTestSupport.contains(dump.output, control),
                "etcdctl get --prefix /vault does not show the group's registration", sourceLocation: sourceLocation)
            #expect(
                logs.contains { FleetTestSupport.contains($0.bytes, control) },
                "no write-ahead log under \(state) shows the group's registration", sourceLocation: sourceLocation)
            for string in strings {
                let needle = Array(string.utf8)
                #expect(
                    !FleetTestSupport.contains(dump.output, needle), "etcdctl get --prefix /vault shows \(string)",
                    sourceLocation: sourceLocation)
                for file in files where FleetTestSupport.contains(file.bytes, needle) {
                    Issue.record("\(file.path) holds \(string)", sourceLocation: sourceLocation)
                }
            }
            return files.reduce(dump.output.count) { $0 + $1.bytes.count }
        }
    }

    /// Runs `scripts/etcd-cluster arguments…` (the cluster stops by itself if this process dies).
    @discardableResult
    static func clusterScript(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Int32 {
        var all = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        all["VAULT_ETCD_UNTIL_PID"] = String(ProcessInfo.processInfo.processIdentifier)
        return try ChildProcess.run(
            "/bin/bash", arguments: [script] + arguments, environment: all.map { "\($0)=\($1)" }
        )
        .exitStatus
    }

    /// Starts a cluster in `state` with `environment` on ports that are free now (`freeBase`), up to
    /// three times: a port can be taken between the check and etcd's bind, and a loaded machine can keep
    /// a member from answering in time. The script's last exit status.
    static func startCluster(_ state: String, _ environment: [String: String] = [:]) throws -> Int32 {
        var status: Int32 = -1
        for _ in 0..<3 where status != 0 {
            var settings = environment
            settings["VAULT_ETCD_BASE_PORT"] = String(try freeBase())
            status = try clusterScript(["start", state], settings)
        }
        return status
    }

    /// A cluster of `members` members (with `environment`: scheme, flags, etcdctl's TLS files) for
    /// `body`, stopped afterwards whatever happens.
    static func withCluster<R>(
        _ label: String, members: Int = 3, environment: [String: String] = [:], _ body: (Cluster) throws -> R
    ) throws -> R {
        let pid = ProcessInfo.processInfo.processIdentifier
        let state = "/dev/shm/vault-fleet-\(label)-\(pid)-\(UUID().uuidString.prefix(8))"
        defer { _ = try? clusterScript(["stop", state]) }
        var settings = environment
        settings["VAULT_ETCD_MEMBERS"] = String(members)
        let started = try startCluster(state, settings)
        try #require(started == 0, "the \(label) cluster did not start (state in \(state))")
        let endpoints = try String(contentsOfFile: state + "/endpoints", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").map(String.init)
        let etcdctlEnvironment = environment.filter { $0.key.hasPrefix("ETCDCTL_") }
        return try body(Cluster(state: state, endpoints: endpoints, etcdctlEnvironment: etcdctlEnvironment))
    }

    /// Whether `haystack` contains `needle` (memchr and memcmp: etcd's write-ahead logs are 64 MiB
    /// each, mostly zeros).
    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        return haystack.withUnsafeBufferPointer { hay in
            needle.withUnsafeBufferPointer { pin in
                guard let start = hay.baseAddress, let pattern = pin.baseAddress, hay.count >= pin.count else {
                    return false
                }
                var offset = 0
                let last = hay.count - pin.count
                while offset <= last {
                    guard let found = memchr(start + offset, Int32(pattern[0]), last - offset + 1) else { return false }
                    let position = start.distance(to: found.assumingMemoryBound(to: UInt8.self))
                    if memcmp(start + position, pattern, pin.count) == 0 { return true }
                    offset = position + 1
                }
                return false
            }
        }
    }

    /// How a process ended: its status, what it wrote, and whether the time limit ended it.
    struct Outcome: CustomStringConvertible {
        let status: Int32
        let output: String
        let errors: String
        let timedOut: Bool
        var description: String {
            "status \(status)\(timedOut ? " (timed out)" : ""), stdout \(output), stderr \(errors)"
        }
    }

    /// Runs `executable arguments…` with `input` on standard input and its output in files (never
    /// pipes, which a grandchild could keep open), SIGKILLed after `seconds`.
    static func run(
        _ executable: String, _ arguments: [String], input: String = "", environment: [String: String],
        seconds: Double
    ) throws -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = environment
        let base = NSTemporaryDirectory() + "/fleet-run-\(UUID().uuidString)"
        try Data(input.utf8).write(to: URL(fileURLWithPath: base + ".in"))
        for name in [".out", ".err"] { _ = FileManager.default.createFile(atPath: base + name, contents: nil) }
        defer { for name in [".in", ".out", ".err"] { try? FileManager.default.removeItem(atPath: base + name) } }
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: base + ".in"))
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".out"))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: base + ".err"))
        try process.run()
        let deadline = Date().addingTimeInterval(seconds)
        var timedOut = false
        while process.isRunning {
            if Date() > deadline {
                timedOut = true
                _ = Glibc.kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(5000)
        }
        process.waitUntilExit()
        func text(_ name: String) -> String {
            String(decoding: FileManager.default.contents(atPath: base + name) ?? Data(), as: UTF8.self)
        }
        return Outcome(
            status: process.terminationStatus, output: text(".out"), errors: text(".err"), timedOut: timedOut)
    }

    /// `vault arguments…` (the static-style CLI, which hands fleet commands to `vault-fleet` through
    /// `VAULT_FLEET_HELPER`), with a time limit of 60 s.
    static func vault(_ arguments: [String], input: String = "") throws -> Outcome {
        try run(
            binaries.appendingPathComponent("vault").path, arguments, input: input,
            environment: [
                "PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                "VAULT_FLEET_HELPER": binaries.appendingPathComponent("vault-fleet").path,
            ], seconds: 60)
    }

    /// The bytes of every file under `directory`, by path relative to it.
    static func snapshot(_ directory: String) -> [String: Data] {
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: directory) else { return [:] }
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = directory + "/" + relative
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue
            else { continue }
            files[relative] = FileManager.default.contents(atPath: path) ?? Data()
        }
        return files
    }

    /// A thread that writes 1, 2, 3… to `item` through `vault`, pausing `interval` microseconds after each
    /// write, until stopped; `written()` is the last value written so far, and `stop()` waits for the
    /// thread and returns the last value with every write's error.
    final class ContinuousWriter: Sendable {
        private let stopping = Mutex(false)
        private let outcome = Mutex<(last: Int, errors: [String])>((0, []))
        private let finished = DispatchSemaphore(value: 0)

        init(_ vault: Vault, item: ItemKey, interval: UInt32) {
            DispatchQueue.global().async { [self] in
                var n = 0
                while !stopping.withLock({ $0 }) {
                    n += 1
                    do {
                        try vault.set(Data(String(n).utf8), for: item)
                        outcome.withLock { $0.last = n }
                        usleep(interval)
                    } catch {
                        outcome.withLock { $0.errors.append("\(error)") }
                    }
                }
                finished.signal()
            }
        }

        func written() -> Int { outcome.withLock { $0.last } }

        func stop() -> (last: Int, errors: [String]) {
            stopping.withLock { $0 = true }
            finished.wait()
            return outcome.withLock { $0 }
        }
    }

    /// Repeats `attempt` every 0.1 s until it returns true or `seconds` pass; whether it did.
    static func eventually(within seconds: Double, _ attempt: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if attempt() { return true }
            usleep(100_000)
        }
        return false
    }

    /// Two vaults standing for two hosts of fleet group `group`: the first makes it on
    /// `endpointsA`, the second joins it on `endpointsB` (the same cluster's), with `readDeadlineB` when
    /// given.
    static func withTwoHosts<R>(
        _ group: AccessGroup, a endpointsA: [String], b endpointsB: [String], readDeadlineB: Int? = nil,
        label: String, _ body: (_ a: Vault, _ b: Vault) throws -> R
    ) throws -> R {
        let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
        return try withTemporaryVault("\(label)-a") { a in
            try withTemporaryVault("\(label)-b") { b in
                let first = try Vault.create(at: a.path, client: client, fleet: .etcd())
                let second = try Vault.create(at: b.path, client: client, fleet: .etcd())
                try first.createFleetGroup(group, settings: FleetSettings(endpoints: endpointsA))
                let key = try first.exportFleetGroupKey(group)
                var settingsB = FleetSettings(endpoints: endpointsB)
                if let readDeadlineB { settingsB.readDeadlineMilliseconds = readDeadlineB }
                try second.joinFleetGroup(group, keyFile: key.unprotectedCopy(), settings: settingsB)
                return try body(first, second)
            }
        }
    }

    /// Two hosts (as `withTwoHosts`) of a new fleet group named `prefix` and a random suffix (so that its
    /// keys can be found in a shared cluster), reading fresh: every read asks etcd, so that what a test
    /// changes behind the vault's back is seen at once (a watch would report it a few milliseconds later).
    static func withTwoFreshHosts<R>(
        _ prefix: String, on endpoints: [String], label: String,
        _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup) throws -> R
    ) throws -> R {
        let group = try AccessGroup("\(prefix)-\(UUID().uuidString.prefix(8).lowercased())")
        return try withTwoHosts(group, a: endpoints, b: endpoints, label: label) { a, b in
            a.requireFreshFleetReads(true)
            b.requireFreshFleetReads(true)
            return try body(a, b, group)
        }
    }

    /// Waits up to 10 s for `endpoint` to answer a linearizable read (it has a leader).
    static func waitForLeader(_ endpoint: String) throws {
        var probe = try EtcdClient.Configuration(endpoints: [endpoint])
        probe.requestTimeoutMilliseconds = 500
        let client = EtcdClient(probe)
        let answered = eventually(within: 10) { (try? client.range(Array("/".utf8))) != nil }
        #expect(answered, "\(endpoint) did not answer a linearizable read within 10 s")
    }
}
