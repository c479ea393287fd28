import Foundation
import Vault
import VaultEtcd
import VaultFleet
import VaultSystem

/// Fleet groups at scale (`vault-bench --fleet --fleet-items N[,N...]`): for each N, a group of N items
/// made on vault A and joined by B, next to a local group of N items on B, measured in one run:
/// - a warm machine's CLI get (B's cache current) next to the local group's CLI get, the same get
///   with `fleet.cached` removed first (a complete refresh, as every command's first read did before),
///   and the same get after each of A's puts (B's command reads what the put changed);
/// - a CLI put (an update) next to `etcdctl put` of the item file's bytes;
/// - a CLI `ls` of the group (absolute: the goal is a time);
/// - etcd's growth per write: its database size (`etcdctl endpoint status`) over the puts, per put.
struct FleetScaleBench {
    let directory: String
    let endpoints: [String]
    let etcdctl: String
    let scales: [Int]
    let quick: Bool
    let progress: Progress

    var processIterations: Int { quick ? 5 : 50 }

    func run() throws -> (timings: [OperationTiming], goals: [String]) {
        guard let cli = siblingExecutable("vault"), siblingExecutable("vault-fleet") != nil else {
            throw BenchError("--fleet-items needs vault and vault-fleet next to vault-bench")
        }
        var rows: [OperationTiming] = []
        var goals: [String] = []
        for items in scales {
            let (timings, lines) = try run(items: items, cli: cli)
            rows += timings
            goals += lines
        }
        return (rows, goals)
    }

    private func run(items: Int, cli: String) throws -> (timings: [OperationTiming], goals: [String]) {
        let fleetGroup = try AccessGroup("fleet\(items)")
        let localGroup = try AccessGroup("local\(items)")
        let client = try Client(
            applicationIdentifier: "bench", accessGroups: [fleetGroup.rawValue, localGroup.rawValue])
        let pathA = FilePath(directory).appending("scale-\(items)-a").string
        let pathB = FilePath(directory).appending("scale-\(items)-b").string
        let a = try Vault.create(at: pathA, client: client, fleet: .etcd())
        let b = try Vault.create(at: pathB, client: client, fleet: .etcd())
        let settings = FleetSettings(endpoints: endpoints)
        try a.createFleetGroup(fleetGroup, settings: settings)
        try b.createGroup(localGroup, unixGroup: nil)
        let secret = Data(repeating: 0x5a, count: 32)
        let fillStarted = ContinuousClock.now
        for index in 0..<items {
            if index % 100 == 0 { progress.show("fleet at \(items) items: filling, \(index)…") }
            try a.set(secret, for: try ItemKey(service: "bench", account: "item\(index)", group: fleetGroup))
            try b.set(secret, for: try ItemKey(service: "bench", account: "item\(index)", group: localGroup))
        }
        let fillTime = ContinuousClock.now - fillStarted
        try b.joinFleetGroup(
            fleetGroup, keyFile: try a.exportFleetGroupKey(fleetGroup).unprotectedCopy(), settings: settings)

        let environment = FleetBench.cliEnvironment
        func checked(_ executable: String, _ arguments: [String], input: String = "/dev/null") throws {
            let result = try ChildProcess.run(
                executable, arguments: arguments, environment: environment, standardInputPath: input)
            guard result.exitStatus == 0 else {
                throw BenchError("`\(([executable] + arguments).joined(separator: " "))` exited \(result.exitStatus)")
            }
        }
        let secretFile = FilePath(directory).appending("scale-secret").string
        try secret.write(to: URL(fileURLWithPath: secretFile))
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
        let item = try FleetBench.latestItem(etcd)
        let valueFile = FilePath(directory).appending("scale-etcd-value").string
        try Data(item.value).write(to: URL(fileURLWithPath: valueFile))
        let floorKey = "/vault-bench/\(ProcessInfo.processInfo.processIdentifier)/scale-put-floor"
        defer { _ = try? etcd.transaction(compare: [], success: [.delete(key: Array(floorKey.utf8), rangeEnd: nil)]) }
        let endpointList = endpoints.joined(separator: ",")

        let get = ["--vault", pathB, "--group", fleetGroup.rawValue, "get", "bench", "item7"]
        let localGet = ["--vault", pathB, "--group", localGroup.rawValue, "get", "bench", "item7"]
        let put = ["--vault", pathA, "--group", fleetGroup.rawValue, "put", "bench", "item7"]
        try checked(cli, get)  // warm: B's cache current and recorded
        let recorder = Recorder(items: items, progress: progress)
        progress.show("fleet at \(items) items: CLI get…")
        try recorder.record(
            "fleet at \(items) items, CLI: vault get (warm machine)", iterations: processIterations,
            floor: "local group at \(items) items, CLI: vault get", { try checked(cli, localGet) }
        ) { _ in try checked(cli, get) }

        // The same get as a command made it before `fleet.cached`: a complete refresh, every item read.
        let record = pathB + "/groups/\(fleetGroup.rawValue)/fleet.cached"
        progress.show("fleet at \(items) items: CLI get, complete refresh…")
        try recorder.record(
            "fleet at \(items) items, CLI: vault get, fleet.cached removed (every item read)",
            iterations: processIterations, floor: "local group at \(items) items, CLI: vault get",
            { try checked(cli, localGet) }
        ) { _ in
            try? FileManager.default.removeItem(atPath: record)
            try checked(cli, get)
        }

        // Another machine's write, then this machine's next command: it reads what the write changed (the
        // root, a node, a leaf, the item), not the group.
        progress.show("fleet at \(items) items: CLI get after the other machine's put…")
        var afterPut: [Double] = []
        for round in 0..<(quick ? 3 : 20) {
            let changed = try ItemKey(service: "bench", account: "item\(round * 37 % items)", group: fleetGroup)
            try a.set(Data("round \(round)".utf8), for: changed)
            afterPut += try time(1) { _ in try checked(cli, get) }
        }
        recorder.add(
            OperationTiming(
                operation: "fleet at \(items) items, CLI: vault get after the other machine's put", items: items,
                nanoseconds: afterPut))

        // A filled the group through a long-lived handle, which records nothing for commands: its first
        // command reads the group completely, and is a warm-up here.
        try checked(cli, ["--vault", pathA, "--group", fleetGroup.rawValue, "get", "bench", "item7"])
        let sizeBefore = try databaseSize(endpointList)
        progress.show("fleet at \(items) items: CLI put…")
        try recorder.record(
            "fleet at \(items) items, CLI: vault put (update)", iterations: processIterations,
            floor: "etcdctl put of the item file's bytes at \(items) items (process)",
            { try checked(etcdctl, ["--endpoints=\(endpointList)", "put", floorKey], input: valueFile) }
        ) { _ in try checked(cli, put, input: secretFile) }
        let sizeAfter = try databaseSize(endpointList)

        progress.show("fleet at \(items) items: CLI ls…")
        try checked(cli, get)
        let list = ["--vault", pathB, "--group", fleetGroup.rawValue, "ls"]
        recorder.add(
            OperationTiming(
                operation: "fleet at \(items) items, CLI: vault ls (warm machine)", items: items,
                nanoseconds: try time(quick ? 2 : 5) { _ in try checked(cli, list) }))

        // A rotation of the group's key (every item sealed again), and the other machine's next command,
        // which takes the new key.
        progress.show("fleet at \(items) items: rotation…")
        let rotationStarted = ContinuousClock.now
        let rotation = try a.rotateFleetGroup(fleetGroup)
        let rotationTime = ContinuousClock.now - rotationStarted
        let takeStarted = ContinuousClock.now
        try checked(cli, get)
        let takeTime = ContinuousClock.now - takeStarted

        func row(_ prefix: String) -> OperationTiming? { recorder.results.first { $0.operation.hasPrefix(prefix) } }
        func verdict(_ met: Bool) -> String { met ? "met" : "not met" }
        var goals: [String] = []
        if let ratio = row("fleet at \(items) items, CLI: vault get")?.ratio {
            goals.append(
                String(format: "%d items: CLI get ≤ 3× a local group's: %.2f× (%@)", items, ratio, verdict(ratio <= 3)))
        }
        if let ratio = row("fleet at \(items) items, CLI: vault put")?.ratio {
            goals.append(
                String(format: "%d items: CLI put ≤ 2× etcdctl put: %.2f× (%@)", items, ratio, verdict(ratio <= 2)))
        }
        if let list = row("fleet at \(items) items, CLI: vault ls") {
            goals.append(
                "\(items) items: CLI ls ≤ 2 s: \(formatDuration(list.medianNanoseconds)) "
                    + "(\(verdict(list.medianNanoseconds <= 2e9)))")
        }
        // Both floors and puts wrote; the floor's bytes are the item file's, so what is left is the vault's.
        let writes = 2 * processIterations
        goals.append(
            "\(items) items: etcd's database grew \((sizeAfter - sizeBefore) / Int64(writes)) bytes a write over "
                + "\(writes) writes (half of them etcdctl's floor puts of the item file's \(item.value.count) bytes); "
                + "filling took \(formatDuration(nanoseconds(fillTime)))")
        goals.append(
            "\(items) items: a rotation of the group's key took \(formatDuration(nanoseconds(rotationTime))) "
                + "(\(rotation.itemsResealed) items sealed again); the other machine's next CLI get, which took the "
                + "new key, \(formatDuration(nanoseconds(takeTime)))")
        try? FileManager.default.removeItem(atPath: pathA)
        try? FileManager.default.removeItem(atPath: pathB)
        return (recorder.results, goals)
    }

    /// The largest database size (bytes) of the cluster's members, as `etcdctl endpoint status` reports it.
    func databaseSize(_ endpointList: String) throws -> Int64 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: etcdctl)
        process.arguments = ["--endpoints=\(endpointList)", "endpoint", "status", "-w", "json"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let members = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
        else { throw BenchError("`etcdctl endpoint status` failed") }
        return members.compactMap { ($0["Status"] as? [String: Any])?["dbSize"] as? NSNumber }.map(\.int64Value).max()
            ?? 0
    }
}
