import Foundation
import Vault
import VaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Access groups (a key per group, shared groups): get and put in a private group and in a shared
/// one, as the owner and as a member opens it, each next to the same floors as the default group's
/// rows; and writers in different groups in parallel against one writer doing all their puts in one
/// group.
///
/// A member is a process that cannot read `master.key` and is in the shared group's Unix group. When
/// the bench runs as root it becomes one in-process: an unused uid and gid (no account is made), set
/// with setgroups/setegid/seteuid around the member rows and restored after them; and it runs the
/// `vault` CLI as that identity through `setpriv`. Otherwise those rows are skipped and only the
/// owner's view of the shared group is measured.
struct GroupBench {
    let directory: String
    let items: Int
    let quick: Bool
    let progress: Progress

    var writeIterations: Int { quick ? 10 : 100 }
    var readIterations: Int { quick ? 100 : 3000 }
    var processIterations: Int { quick ? 10 : 200 }
    let secret = Data(repeating: 0x5a, count: 32)
    let privateGroup = try! AccessGroup("private")
    let sharedGroup = try! AccessGroup("shared")

    /// The figures, and the throughput of the parallel writers over that of the single one.
    func run() throws -> (timings: [OperationTiming], ownGroups: Double, oneGroup: Double) {
        let vaultPath = FilePath(directory).appending("vault").string
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let member = geteuid() == 0 ? try MemberIdentity.unused() : nil
        let owner = try Vault.create(
            at: vaultPath,
            client: try Client(applicationIdentifier: "bench", accessGroups: ["private", "shared"]))
        try owner.createGroup(privateGroup, unixGroup: nil)
        try owner.createGroup(sharedGroup, unixGroup: member?.gid ?? getegid())
        progress.show("groups: filling \(items) items in two groups…")
        try owner.withBulkLoad { () throws(VaultError) in
            for group in [privateGroup, sharedGroup] {
                for i in 0..<items {
                    var attributes = ItemAttributes(service: "bench", account: "item-\(i)")
                    attributes.accessGroup = group
                    try owner.add(.genericPassword, attributes: attributes, data: secret)
                }
            }
        }
        let recorder = Recorder(items: items, progress: progress)
        let floors = try Floors(directory: directory, fileSize: try itemFileSize(owner, privateGroup))
        for i in 0..<(quick ? 2 : 30) { try floors.durableWrite(i) }
        try measureGetAndPut(owner, in: privateGroup, as: "private group", floors: floors, recorder)
        try measureGetAndPut(owner, in: sharedGroup, as: "shared group, owner", floors: floors, recorder)
        if let member {
            try measureMember(member, vaultPath: vaultPath, fileSize: try itemFileSize(owner, sharedGroup), recorder)
            try measureMemberProcess(member, vaultPath: vaultPath, recorder)
        } else {
            skip("not root: the member rows (in-process and CLI) need root to become another user")
        }
        let parallel = try ParallelWriters(
            directory: FilePath(directory).appending("parallel").string, quick: quick, progress: progress
        ).run()
        return (recorder.results + parallel.timings, parallel.ownGroups, parallel.oneGroup)
    }

    /// "get (data)" and "put (update, durable)" of one item of `group`, next to the read and
    /// durable-write floors.
    func measureGetAndPut(
        _ vault: Vault, in group: AccessGroup, as name: String, floors: Floors, _ recorder: Recorder
    ) throws {
        let key = try ItemKey(service: "bench", account: "item-\(items / 2)", group: group)
        guard try vault.data(for: key) == secret else {
            throw BenchError("groups: \(key) in \(vault.path(of: group)) does not hold the bench's secret")
        }
        try recorder.record(
            "\(name): get (data)", iterations: readIterations, floor: Floors.readName, floors.readAndOpen
        ) { _ in
            _ = try vault.data(for: key)
        }
        var floorRun = 0
        try recorder.record(
            "\(name): put (update, durable)", iterations: writeIterations, floor: Floors.writeName,
            {
                floorRun += 1
                try floors.durableWrite(floorRun)
            }
        ) { i in
            try vault.set(Data("value-\(i)".utf8), for: key)
        }
        try vault.set(secret, for: key)
    }

    /// The shared group as a member opens it, in this process: `member`'s identity from the open to
    /// the last row, with floors in a directory of the member's own.
    func measureMember(_ member: MemberIdentity, vaultPath: String, fileSize: Int, _ recorder: Recorder) throws {
        let floorDirectory = FilePath(directory).appending("member-floor").string
        try FileManager.default.createDirectory(atPath: floorDirectory, withIntermediateDirectories: true)
        guard chown(floorDirectory, member.uid, member.gid) == 0 else {
            throw BenchError("cannot give \(floorDirectory) to uid \(member.uid): \(Errno(rawValue: errno))")
        }
        try member.become {
            let vault = try Vault.open(
                at: vaultPath, client: try Client(applicationIdentifier: "bench-member", accessGroups: ["shared"]))
            guard vault.isMember else {
                throw BenchError("uid \(member.uid) opened \(vaultPath) as its owner, not as a member")
            }
            let floors = try Floors(directory: floorDirectory, fileSize: fileSize)
            for i in 0..<(quick ? 2 : 10) { try floors.durableWrite(i) }
            try measureGetAndPut(
                vault, in: sharedGroup, as: "shared group, member in-process (seteuid)", floors: floors,
                recorder)
        }
    }

    /// A whole `vault get` process as the member (through setpriv), next to `/bin/true` started the
    /// same way.
    func measureMemberProcess(_ member: MemberIdentity, vaultPath: String, _ recorder: Recorder) throws {
        guard let cli = siblingExecutable("vault") else {
            return skip("no vault binary next to vault-bench: the member CLI row is skipped")
        }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv") else {
            return skip("no /usr/bin/setpriv (util-linux): the member CLI row is skipped")
        }
        let setpriv = ["--reuid=\(member.uid)", "--regid=\(member.gid)", "--groups=\(member.gid)", "--"]
        let environment = ["PATH=/usr/bin:/bin", "HOME=/nonexistent"]
        let get = setpriv + [cli, "--vault", vaultPath, "--group", "shared", "get", "bench", "item-\(items / 2)"]
        let check = try ChildProcess.run("/usr/bin/setpriv", arguments: get, environment: environment)
        guard check.exitStatus == 0 else {
            return skip(
                "`vault get` as uid \(member.uid) exited \(check.exitStatus) (can that uid reach \(cli)?): the "
                    + "member CLI row is skipped")
        }
        progress.show("groups: member CLI get…")
        try recorder.record(
            "shared group: CLI vault get as member (process)", iterations: processIterations,
            floor: "floor: /bin/true process via setpriv as member",
            {
                _ = try ChildProcess.run(
                    "/usr/bin/setpriv", arguments: setpriv + ["/bin/true"], environment: environment)
            }
        ) { _ in
            _ = try ChildProcess.run("/usr/bin/setpriv", arguments: get, environment: environment)
        }
    }

    func itemFileSize(_ vault: Vault, _ group: AccessGroup) throws -> Int {
        let directory = vault.path(of: group)
        guard
            let name = try FileManager.default.contentsOfDirectory(atPath: directory).first(where: {
                $0.hasSuffix(".item")
            })
        else { throw BenchError("groups: no item file in \(directory)") }
        return try FileManager.default.attributesOfItem(atPath: (FilePath(directory) / name).string)[.size] as! Int
    }

    func skip(_ message: String) {
        progress.show("")
        FileHandle.standardError.write(Data("vault-bench: \(message)\n".utf8))
    }
}

/// A uid and gid that no account has, for a member made on the spot; only root can take them.
struct MemberIdentity {
    let uid: uid_t
    let gid: gid_t

    /// The first id from 61000 that is neither a user's nor a group's in the account databases.
    static func unused() throws -> MemberIdentity {
        for id in UInt32(61000)..<UInt32(62000) where getpwuid(id) == nil && getgrgid(id) == nil {
            return MemberIdentity(uid: id, gid: id)
        }
        throw BenchError("no unused uid and gid between 61000 and 61999 for the member rows")
    }

    /// Runs `body` with this effective uid and gid and this gid as the only supplementary group (glibc
    /// applies each change to every thread), and restores root's afterwards, however `body` ends.
    func become<R>(_ body: () throws -> R) throws -> R {
        let savedGID = getegid()
        var saved = [gid_t](repeating: 0, count: Int(max(0, getgroups(0, nil))))
        guard getgroups(Int32(saved.count), &saved) == Int32(saved.count) else {
            throw BenchError("cannot read this process's supplementary groups: \(Errno(rawValue: errno))")
        }
        var groups = [gid]
        guard setgroups(1, &groups) == 0, setegid(gid) == 0, seteuid(uid) == 0 else {
            let error = Errno(rawValue: errno)
            restore(gid: savedGID, groups: saved)
            throw BenchError("cannot become uid \(uid) gid \(gid): \(error)")
        }
        defer { restore(gid: savedGID, groups: saved) }
        return try body()
    }

    private func restore(gid: gid_t, groups: [gid_t]) {
        guard seteuid(0) == 0, setegid(gid) == 0, setgroups(groups.count, groups) == 0 else {
            // The rest of the bench would run as the member: stop rather than measure that.
            FileHandle.standardError.write(
                Data("vault-bench: cannot become root again: \(Errno(rawValue: errno))\n".utf8))
            exit(1)
        }
    }
}

/// Eight writer processes putting into eight groups of one vault (one each), and into one
/// group (their own items), against one process doing all their puts in one group; each writer is
/// `vault-bench --writer PATH GROUP COUNT [FIRST]`.
struct ParallelWriters {
    let directory: String
    let quick: Bool
    let progress: Progress

    static let processes = 8
    var perProcess: Int { quick ? 25 : 250 }
    var rounds: Int { quick ? 1 : 3 }

    /// The rows, and the throughput of the parallel writers over that of the single one: in their own
    /// groups, and in one group.
    func run() throws -> (timings: [OperationTiming], ownGroups: Double, oneGroup: Double) {
        let path = FilePath(directory).appending("vault").string
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let owner = try Vault.create(at: path, client: try Client(applicationIdentifier: "bench"))
        let groups = (0..<Self.processes).map { "writer-\($0)" }
        for name in groups + ["one-writer", "many-writers"] {
            try owner.createGroup(try AccessGroup(name), unixGroup: nil)
        }
        // The items are made before anything is timed: every timed put is an update.
        let together = (0..<Self.processes).map { (path, "many-writers", Self.keys, $0 * Self.keys) }
        _ = try spawn(groups.map { (path, $0, Self.keys, 0) } + [(path, "one-writer", Self.keys, 0)] + together)
        var one: [Double] = []
        var spread: [Double] = []
        var shared: [Double] = []
        let total = Self.processes * perProcess
        // Alternating, so that all three see the same disk.
        for round in 0..<rounds {
            progress.show("groups: parallel writers, round \(round + 1) of \(rounds)…")
            one.append(try spawn([(path, "one-writer", total, 0)]) / Double(total))
            spread.append(try spawn(groups.map { (path, $0, perProcess, 0) }) / Double(total))
            shared.append(
                try spawn((0..<Self.processes).map { (path, "many-writers", perProcess, $0 * Self.keys) })
                    / Double(total))
        }
        let serial = OperationTiming(
            operation: "groups: 1 writer process, \(total) puts in 1 group (per put)", items: Self.keys,
            nanoseconds: one)
        let rows = [
            serial,
            Self.row(
                "groups: \(Self.processes) writer processes × \(perProcess) puts, own groups (per put)", spread,
                against: serial),
            Self.row(
                "groups: \(Self.processes) writer processes × \(perProcess) puts, one group (per put)", shared,
                against: serial),
        ]
        return (
            rows, serial.medianNanoseconds / rows[1].medianNanoseconds,
            serial.medianNanoseconds / rows[2].medianNanoseconds
        )
    }

    /// A row of per-put times `nanoseconds`, with `serial` as its floor.
    static func row(_ operation: String, _ nanoseconds: [Double], against serial: OperationTiming) -> OperationTiming {
        var timing = OperationTiming(operation: operation, items: keys, nanoseconds: nanoseconds)
        timing.floor = serial.operation
        timing.floorMedianNanoseconds = serial.medianNanoseconds
        timing.ratio = timing.medianNanoseconds / serial.medianNanoseconds
        return timing
    }

    /// The accounts each writer cycles through.
    static let keys = 10

    /// Starts one writer per (vault, group, count, first account); once every one has opened the vault
    /// (said "ready"), tells them all to go, and returns the nanoseconds from the first writer's first
    /// put to the last writer's last (as each measured them on the system's monotonic clock): the puts'
    /// throughput, not the start-up of these processes (a dynamically linked Foundation program: about
    /// 15 ms each here, which would be a third of eight writers' time). A writer that fails is an error.
    func spawn(_ writers: [(path: String, group: String, count: Int, first: Int)]) throws -> Double {
        let started = try writers.map { writer in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["--writer", writer.path, writer.group, String(writer.count), String(writer.first)]
            let input = Pipe()
            let output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            return (process, input, output)
        }
        for (_, _, output) in started {
            guard String(decoding: output.fileHandleForReading.readData(ofLength: 6), as: UTF8.self) == "ready\n"
            else { throw BenchError("a writer did not open the vault") }
        }
        for (_, input, _) in started { try input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8)) }
        var spans: [(start: Int64, end: Int64)] = []
        for ((process, _, output), writer) in zip(started, writers) {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            let fields = text.split(whereSeparator: \.isWhitespace).compactMap { Int64($0) }
            guard process.terminationStatus == 0, fields.count == 2 else {
                throw BenchError(
                    "the writer of group \(writer.group) in \(writer.path) exited \(process.terminationStatus)")
            }
            spans.append((fields[0], fields[1]))
        }
        return Double(spans.map(\.end).max()! - spans.map(\.start).min()!)
    }

    /// The hidden `--writer PATH GROUP COUNT FIRST`: opens the vault, says "ready", waits for a line
    /// on standard input, then makes COUNT puts (add or update) of 32 bytes in GROUP, cycling through
    /// `keys` accounts of service "parallel" from account number FIRST on, and prints the monotonic
    /// clock's nanoseconds before the first and after the last.
    static func write(path: String, group: String, count: Int, first: Int) throws {
        let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "bench", accessGroups: [group]))
        let keys = try (first..<first + Self.keys).map {
            try ItemKey(service: "parallel", account: "item-\($0)", group: try AccessGroup(group))
        }
        FileHandle.standardOutput.write(Data("ready\n".utf8))
        _ = readLine()
        let start = MonotonicClock.nanoseconds()
        for i in 0..<count {
            try vault.set(Data(repeating: UInt8(truncatingIfNeeded: i), count: 32), for: keys[i % keys.count])
        }
        let end = MonotonicClock.nanoseconds()
        FileHandle.standardOutput.write(Data("\(start) \(end)\n".utf8))
    }
}

/// A failure of the bench itself, naming what it was doing.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The executable `name` next to this one, if there is one.
/// The executable `name` beside this one; for `vault`, `VAULT_BENCH_CLI` first (the installed build that
/// scripts/build-cli makes, which the CLI rows are meant to measure).
func siblingExecutable(_ name: String) -> String? {
    if name == "vault", let given = ProcessInfo.processInfo.environment["VAULT_BENCH_CLI"], !given.isEmpty {
        return FileManager.default.isExecutableFile(atPath: given) ? given : nil
    }
    let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
        .path
    return FileManager.default.isExecutableFile(atPath: path) ? path : nil
}
