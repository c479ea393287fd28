import Foundation
import Vault
import VaultEtcd
import VaultFleet
import VaultSystem

/// Fleet groups (`vault-bench --fleet`): one group in etcd shared by two vaults on this machine (A made
/// it, B joined), measured in one run against etcd's own tools on the same cluster and the same bytes:
///
/// - get: a long-lived handle's (from the cache while its watch is live and the last check is under a
///   second old, else after a check of etcd's revisions) next to an in-process etcd range of the item's
///   key and to a local group's get; the CLI's (`vault`, which hands the command to
///   `vault-fleet`) next to `etcdctl get` of the item's key, each a whole process;
/// - put: the CLI's next to `etcdctl put` of a value of the item file's size, each a whole process;
/// - propagation: a put on A until a long-lived handle on B, polling on a thread of its own, reads it;
/// - etcd down: reads from the cache, a long-lived handle's and the CLI's, next to a local group's, with
///   the members killed (a connection is refused at once) and, in a full run, paused (SIGSTOP: a request
///   waits for its time limit on every endpoint; a long-lived handle right after the pause, and once a
///   check is due).
///
/// The cluster is `VAULT_BENCH_ETCD` (endpoints, comma-separated), else three members this bench
/// starts with `scripts/etcd-cluster` (data on tmpfs, ports of its own) and stops at the end, however
/// the bench ends (a watchdog of the script stops it once this process is gone). With a given cluster,
/// "etcd down" is B's settings pointed at an endpoint where nothing listens, and the paused rows are
/// skipped.
struct FleetBench {
    /// The environment of the CLI rows' processes. VAULT_FLEET_HELPER passes through, so that the rows
    /// can time the helper as scripts/install builds it (`-static-stdlib`), which starts in less time
    /// than the package's dynamically linked one.
    static var cliEnvironment: [String] {
        var environment = ["PATH=/usr/bin:/bin", "HOME=/nonexistent"]
        if let helper = ProcessInfo.processInfo.environment["VAULT_FLEET_HELPER"], !helper.isEmpty {
            environment.append("VAULT_FLEET_HELPER=\(helper)")
        }
        return environment
    }

    let directory: String
    let quick: Bool
    let progress: Progress
    /// Group sizes for the rows at scale (`FleetScaleBench`), run on the same cluster first.
    var scales: [Int] = []

    var readIterations: Int { quick ? 50 : 1000 }
    var writeIterations: Int { quick ? 10 : 200 }
    var processIterations: Int { quick ? 5 : 100 }
    var propagationRounds: Int { quick ? 20 : 200 }
    var pausedSamples: Int { quick ? 0 : 3 }
    let fleetGroup = try! AccessGroup("fleet")
    let localGroup = try! AccessGroup("local")
    let secret = Data(repeating: 0x5a, count: 32)

    /// The rows, and one line per goal of issue 17 with the figure that answers it.
    func run() throws -> (timings: [OperationTiming], goals: [String]) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard
            let etcdctl = ["/usr/bin/etcdctl", "/usr/local/bin/etcdctl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw BenchError("--fleet needs etcdctl (Debian's etcd-client) for its floors")
        }
        progress.show("fleet: starting etcd…")
        let cluster = try BenchCluster.startOrGiven()
        defer { cluster.stop() }

        var scaleRows: (timings: [OperationTiming], goals: [String]) = ([], [])
        if !scales.isEmpty {
            scaleRows = try FleetScaleBench(
                directory: directory, endpoints: cluster.endpoints, etcdctl: etcdctl, scales: scales, quick: quick,
                progress: progress
            ).run()
        }

        let client = try Client(applicationIdentifier: "bench", accessGroups: ["fleet", "local"])
        let pathA = FilePath(directory).appending("fleet-a").string
        let pathB = FilePath(directory).appending("fleet-b").string
        let a = try Vault.create(at: pathA, client: client, fleet: .etcd())
        let b = try Vault.create(at: pathB, client: client, fleet: .etcd())
        let settings = FleetSettings(endpoints: cluster.endpoints)
        progress.show("fleet: making and joining the group…")
        try a.createFleetGroup(fleetGroup, settings: settings)
        try b.joinFleetGroup(
            fleetGroup, keyFile: try a.exportFleetGroupKey(fleetGroup).unprotectedCopy(), settings: settings)
        try b.createGroup(localGroup, unixGroup: nil)
        let fleetKey = try ItemKey(service: "bench", account: "item", group: fleetGroup)
        let localKey = try ItemKey(service: "bench", account: "item", group: localGroup)
        try a.set(secret, for: fleetKey)
        try b.set(secret, for: localKey)
        guard try b.data(for: fleetKey) == secret else {
            throw BenchError("fleet: \(pathB) does not read the item \(pathA) put in group fleet")
        }
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: cluster.endpoints))
        let item = try Self.latestItem(etcd)

        // The floors of the puts write the item file's bytes under a key of the bench's own, so that the
        // vault's item is left alone.
        let floorKey = "/vault-bench/\(ProcessInfo.processInfo.processIdentifier)/put-floor"
        defer { _ = try? etcd.transaction(compare: [], success: [.delete(key: Array(floorKey.utf8), rangeEnd: nil)]) }

        let recorder = Recorder(items: 1, progress: progress)
        progress.show("fleet: gets in-process…")
        try recorder.record(
            "fleet, long-lived handle: get (etcd up)", iterations: readIterations,
            floor: "floor: etcd range of the item's key (in-process, linearizable)",
            { _ = try etcd.range(item.key) }
        ) { _ in
            _ = try b.data(for: fleetKey)
        }
        try recorder.record(
            "fleet, long-lived handle: get (etcd up), next to a local group", iterations: readIterations,
            floor: Self.localGetName, { _ = try b.data(for: localKey) }
        ) { _ in
            _ = try b.data(for: fleetKey)
        }

        progress.show("fleet: puts in-process…")
        try recorder.record(
            "fleet, long-lived handle: put (update)", iterations: writeIterations,
            floor: "floor: etcd put of the item file's bytes (in-process)",
            { try etcd.put(Array(floorKey.utf8), item.value) }
        ) { i in
            try a.set(Data(repeating: UInt8(truncatingIfNeeded: i), count: secret.count), for: fleetKey)
        }
        try a.set(secret, for: fleetKey)

        // The CLI rows: `vault` (static) execs `vault-fleet` for a fleet group.
        let cli = siblingExecutable("vault")
        if cli == nil || siblingExecutable("vault-fleet") == nil {
            skip("no vault and vault-fleet next to vault-bench: the CLI rows are skipped")
        }
        let environment = Self.cliEnvironment
        if let helper = ProcessInfo.processInfo.environment["VAULT_FLEET_HELPER"], !helper.isEmpty {
            print("vault-fleet: \(helper) (VAULT_FLEET_HELPER)")
        }
        let endpointList = cluster.endpoints.joined(separator: ",")
        let secretFile = FilePath(directory).appending("secret").string
        try secret.write(to: URL(fileURLWithPath: secretFile))
        // etcdctl put reads its value from standard input when none is given as an argument: the item
        // file's bytes as etcd holds them (the same size as every CLI put sends). Never argv: a value
        // there is visible to every process of the machine (these are bench bytes, but the floor does it
        // as a secret would be done).
        let valueFile = FilePath(directory).appending("etcd-value").string
        try Data(item.value).write(to: URL(fileURLWithPath: valueFile))
        let itemKeyText = String(decoding: item.key, as: UTF8.self)
        func checked(_ executable: String, _ arguments: [String], input: String = "/dev/null") throws {
            let result = try ChildProcess.run(
                executable, arguments: arguments, environment: environment, standardInputPath: input)
            guard result.exitStatus == 0 else {
                throw BenchError("`\(([executable] + arguments).joined(separator: " "))` exited \(result.exitStatus)")
            }
        }
        if let cli {
            let get = ["--vault", pathB, "--group", "fleet", "get", "bench", "item"]
            let put = ["--vault", pathA, "--group", "fleet", "put", "bench", "item"]
            try checked(cli, get)
            try checked(cli, put, input: secretFile)
            try checked(etcdctl, ["--endpoints=\(endpointList)", "put", floorKey], input: valueFile)
            progress.show("fleet: CLI get…")
            try recorder.record(
                "fleet, CLI: vault get (process, via vault-fleet)", iterations: processIterations,
                floor: "floor: etcdctl get of the item's key (process)",
                { try checked(etcdctl, ["--endpoints=\(endpointList)", "get", itemKeyText]) }
            ) { _ in
                try checked(cli, get)
            }
            progress.show("fleet: CLI put…")
            try recorder.record(
                "fleet, CLI: vault put (process, via vault-fleet)", iterations: processIterations,
                floor: "floor: etcdctl put of the item file's bytes (process)",
                { try checked(etcdctl, ["--endpoints=\(endpointList)", "put", floorKey], input: valueFile) }
            ) { _ in
                try checked(cli, put, input: secretFile)
            }
        }

        progress.show("fleet: propagation…")
        for row in try propagate(from: a, to: b, key: fleetKey) { recorder.add(row) }

        // etcd down: killed (or, for a given cluster, B pointed at an endpoint with no listener).
        var down = b
        if cluster.isOwn {
            if pausedSamples > 0 {
                progress.show("fleet: reads with etcd paused…")
                try cluster.members("pause")
                defer { try? cluster.members("resume") }
                // Right after the pause, the last check is under a second old and the watch has said
                // nothing: the cache answers. Once a check is due, the read waits for the time limits.
                recorder.add(
                    OperationTiming(
                        operation: "fleet, long-lived handle: get, etcd just paused (last check < 1 s ago)",
                        items: 1, nanoseconds: try time(pausedSamples) { _ in _ = try b.data(for: fleetKey) }))
                var due: [Double] = []
                for _ in 0..<pausedSamples {
                    Thread.sleep(forTimeInterval: 1.1)
                    due += try time(1) { _ in _ = try b.data(for: fleetKey) }
                }
                recorder.add(
                    OperationTiming(
                        operation: "fleet, long-lived handle: get, etcd paused, check due (cache after time limits)",
                        items: 1, nanoseconds: due))
                if let cli {
                    let get = ["--vault", pathB, "--group", "fleet", "get", "bench", "item"]
                    recorder.add(
                        OperationTiming(
                            operation: "fleet, CLI: vault get, etcd paused (process, from the cache after time limits)",
                            items: 1, nanoseconds: try time(pausedSamples) { _ in try checked(cli, get) }))
                }
            }
            try cluster.members("kill")
        } else {
            try "endpoint=http://127.0.0.1:9\n".write(
                toFile: FilePath(pathB).appending("groups/fleet/fleet.conf").string, atomically: true,
                encoding: .utf8)
            down = try Vault.open(at: pathB, client: client, fleet: .etcd())
        }
        progress.show("fleet: reads with etcd down…")
        guard try down.data(for: fleetKey) != nil else {
            throw BenchError("fleet: with etcd down, \(pathB) has no cached item")
        }
        let cacheRow = "fleet, long-lived handle: get, etcd down (refused: from the cache)"
        try recorder.record(
            cacheRow, iterations: readIterations, floor: Self.localGetName, { _ = try down.data(for: localKey) }
        ) {
            _ in _ = try down.data(for: fleetKey)
        }
        if let cli {
            try recorder.record(
                "fleet, CLI: vault get, etcd down (refused: process, from the cache)", iterations: processIterations,
                floor: "local group, CLI: vault get (process)",
                { try checked(cli, ["--vault", pathB, "--group", "local", "get", "bench", "item"]) }
            ) { _ in
                try checked(cli, ["--vault", pathB, "--group", "fleet", "get", "bench", "item"])
            }
        }

        return (
            scaleRows.timings + recorder.results, scaleRows.goals + Self.goals(recorder.results, cacheRow: cacheRow)
        )
    }

    static let localGetName = "local group, long-lived handle: get"

    /// The last item written in the cluster (the bench's own): its key and value.
    static func latestItem(_ etcd: EtcdClient) throws -> EtcdKeyValue {
        let all = try etcd.range(prefix: Array("/vault/v2/".utf8))
        guard
            let latest = all.keyValues.filter({ String(decoding: $0.key, as: UTF8.self).contains("/items/") })
                .max(by: { $0.modRevision < $1.modRevision })
        else { throw BenchError("fleet: no item under /vault/v2/ in etcd after a put") }
        return latest
    }

    /// `propagationRounds` puts of new bytes on `a`, each until `b`'s long-lived handle, which polls on
    /// a thread of its own (a read, then 0.5 ms), reads them: from the put's return, and from its start.
    func propagate(from a: Vault, to b: Vault, key: ItemKey) throws -> [OperationTiming] {
        let poller = PropagationPoller(vault: b, key: key)
        let thread = Thread { poller.poll() }
        thread.start()
        defer { poller.finish() }
        var afterReturn: [Double] = []
        var afterStart: [Double] = []
        var lost = 0
        let clock = ContinuousClock()
        for round in 0..<propagationRounds {
            var value = Data(count: 32)
            for index in value.indices { value[index] = UInt8.random(in: 0...255) }
            value[0] = UInt8(truncatingIfNeeded: round)
            poller.expect(value)
            let start = clock.now
            try a.set(value, for: key)
            let returned = clock.now
            guard let seen = poller.wait(timeout: 5) else {
                lost += 1
                afterReturn.append(5e9)
                afterStart.append(5e9)
                continue
            }
            afterReturn.append(max(0, nanoseconds(seen - returned)))
            afterStart.append(nanoseconds(seen - start))
        }
        if lost > 0 {
            skip("fleet: \(lost) of \(propagationRounds) puts were not seen on B within 5 s (counted as 5 s)")
        }
        if let failure = poller.failure { throw BenchError("fleet: B's poller failed: \(failure)") }
        return [
            OperationTiming(
                operation: "fleet, propagation: A's put returned → B's long-lived handle reads it", items: 1,
                nanoseconds: afterReturn),
            OperationTiming(
                operation: "fleet, propagation: A's put started → B's long-lived handle reads it", items: 1,
                nanoseconds: afterStart),
        ]
    }

    /// The goals of issue 17, each with its figure from `rows` (reported, never asserted).
    static func goals(_ rows: [OperationTiming], cacheRow: String) -> [String] {
        func row(_ prefix: String) -> OperationTiming? { rows.first { $0.operation.hasPrefix(prefix) } }
        func verdict(_ met: Bool) -> String { met ? "met" : "not met" }
        var lines: [String] = []
        if let put = row("fleet, CLI: vault put"), let ratio = put.ratio {
            lines.append(String(format: "put ≤ 1.5× etcdctl put: %.2f× (%@)", ratio, verdict(ratio <= 1.5)))
        }
        if let up = row("fleet, long-lived handle: get (etcd up), next"), let ratio = up.ratio {
            lines.append(
                String(
                    format:
                        "long-lived handle's get from the cache (watch live) within 2× of a local group's: %.2f× (%@)",
                    ratio, verdict(ratio <= 2)))
        }
        if let cache = row(cacheRow), let ratio = cache.ratio {
            lines.append(
                String(
                    format:
                        "(with etcd killed, no watch: each read tries every endpoint, then the cache: %.2f× a local "
                        + "group's get)", ratio))
        }
        if let propagation = row("fleet, propagation: A's put returned") {
            lines.append(
                "propagation median ≤ 50 ms: \(formatDuration(propagation.medianNanoseconds)) "
                    + "(\(verdict(propagation.medianNanoseconds <= 50e6))); p99 ≤ 1 s: "
                    + "\(formatDuration(propagation.p99Nanoseconds)) (\(verdict(propagation.p99Nanoseconds <= 1e9)))")
        }
        return lines
    }

    func skip(_ message: String) {
        progress.show("")
        FileHandle.standardError.write(Data("vault-bench: \(message)\n".utf8))
    }
}

/// A duration in nanoseconds.
func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
}
