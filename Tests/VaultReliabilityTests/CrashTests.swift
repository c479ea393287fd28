import Foundation
import Testing
import Vault
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The journal a supervisor keeps of one writer's operations: what it started and what it was told
/// succeeded ("ack"). A SIGKILL can land anywhere, so the one operation started but not acknowledged
/// may or may not have happened; every acknowledged one must have.
struct WriterJournal {
    enum Operation: Equatable {
        case set(key: String, value: String)
        case delete(key: String)
        case move(from: String, to: String)

        func apply(to state: inout [String: String]) {
            switch self {
            case .set(let key, let value): state[key] = value
            case .delete(let key): state[key] = nil
            case .move(let from, let to):
                state[to] = state[from]
                state[from] = nil
            }
        }
    }

    var acknowledged: [Operation] = []
    var inFlight: Operation?

    /// Parses the helper's output; a partial last line (impossible with one write(2) per line, but
    /// cheap to allow) is ignored.
    init(output: String) {
        var started: [Int: Operation] = [:]
        var order: [Int] = []
        let lines = output.split(separator: "\n", omittingEmptySubsequences: true)
        let complete = output.hasSuffix("\n") ? lines : lines.dropLast()
        for line in complete {
            let f = line.split(separator: " ").map(String.init)
            if f.first == "start", f.count >= 4, let seq = Int(f[1]) {
                switch f[2] {
                case "set" where f.count == 5: started[seq] = .set(key: f[3], value: f[4])
                case "del": started[seq] = .delete(key: f[3])
                case "move" where f.count == 5: started[seq] = .move(from: f[3], to: f[4])
                default: continue
                }
                order.append(seq)
            } else if f.first == "ack", f.count == 2, let seq = Int(f[1]), let op = started.removeValue(forKey: seq) {
                acknowledged.append(op)
            }
        }
        inFlight = order.last.flatMap { started[$0] }
    }

    /// What a crash may leave of the keys with `prefix` (one writer's): the state of `model` after the
    /// acknowledged operations, or after the unacknowledged one too.
    func outcomes(of model: [String: String], prefix: String) -> (before: [String: String], after: [String: String]) {
        var before = model.filter { $0.key.hasPrefix(prefix) }
        for op in acknowledged { op.apply(to: &before) }
        var after = before
        inFlight?.apply(to: &after)
        return (before, after)
    }

    /// `model` with the keys with `prefix` replaced by `actual`, what the vault now holds for them.
    static func settle(_ model: inout [String: String], prefix: String, at actual: [String: String]) {
        for key in model.keys where key.hasPrefix(prefix) { model[key] = nil }
        model.merge(actual) { $1 }
    }
}

/// The logical content of the vault for the crash writers' keys, as a scan sees it and as point
/// look-ups see it (they must agree).
func crashState(_ vault: Vault) throws -> (scan: [String: String], pointLookupDisagreements: [String]) {
    var scan: [String: String] = [:]
    let query = Query(
        itemClass: .genericPassword, attributes: ItemAttributes(service: "crash", account: nil), limit: .all)
    let items: [MatchedItem]
    do {
        items = try vault.copyMatching(query, returning: [.attributes, .data])
    } catch {
        guard error.status == .itemNotFound else { throw error }
        items = []
    }
    for item in items {
        let account = item.attributes.account ?? ""
        if account.hasSuffix("-boot") { continue }
        scan[account] = String(decoding: item.data ?? Data(), as: UTF8.self)
    }
    var disagreements: [String] = []
    for writer in 0..<4 {
        for k in 0..<8 {
            let account = "w\(writer)-k\(k)"
            let point = try vault.data(for: try ItemKey(service: "crash", account: account))
                .map { String(decoding: $0, as: UTF8.self) }
            if point != scan[account] {
                disagreements.append("\(account): point look-up \(point ?? "nil"), scan \(scan[account] ?? "nil")")
            }
        }
    }
    return (scan, disagreements)
}

@Suite(.serialized) struct CrashTests {
    /// 4 writer processes doing sets, deletes and moves on one vault are SIGKILLed at random points;
    /// after each round the vault is reopened and checked against the journal of acknowledged
    /// operations. The sets go through group commit (`PreparedItemWrite`): writers killed with a
    /// prepared file, between the exchange and the shared directory fsync, or while flushing for others.
    @Test func killedWritersLoseNoAcknowledgedWrite() throws {
        try withTemporaryDirectory("crash") { dir in
            let path = dir.path + "/vault"
            _ = try Vault.create(at: path, client: try testClient())
            try crashRounds(
                path: path, app: testApp, iterations: Sizes.crashIterations, figureName: "crash", groupCommit: true
            ) { index, writer, iteration in
                try Helper(["crash-writer", path, testApp, writer, String(iteration * 1_000_000 + index * 100_000)])
            }
        }
    }

    /// The same in a shared group: the 4 writers are two members of its Unix group
    /// (two processes each), and the owner's long-lived handle writes after each round.
    @Test(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"))
    func killedMembersLoseNoAcknowledgedWriteInASharedGroup() throws {
        try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            for user in users { try addMember(user, to: groups[0]) }
            try withTemporaryDirectory("crash-shared") { dir in
                try makeTraversable(dir.path)
                let path = dir.path + "/vault"
                let owner = try Vault.create(at: path, client: try testClient("db"))
                try owner.createGroup(try AccessGroup("db"), unixGroup: groups[0].gid)
                try withExecutableForOtherUsers(helperPath) { helper in
                    try crashRounds(
                        path: path, app: "db", iterations: max(Sizes.crashIterations / 4, 10),
                        figureName: "crash-shared", groupCommit: true
                    ) { index, writer, iteration in
                        try Helper(
                            ["crash-writer", path, "db", writer, String(iteration * 1_000_000 + index * 100_000)],
                            environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], as: users[index % 2],
                            executable: helper)
                    }
                }
            }
        }
    }

    /// Rounds of 4 writers (started by `start`) killed at random points, each round checked against
    /// the journal of acknowledged operations, as `killedWritersLoseNoAcknowledgedWrite` describes;
    /// reads go through client `app`.
    func crashRounds(
        path: String, app: String, iterations: Int, figureName: String, groupCommit: Bool = false,
        start: (_ index: Int, _ writer: String, _ iteration: Int) throws -> Helper
    ) throws {
        let writers = (0..<4).map { "w\($0)" }
        var model: [String: String] = [:]
        var lost: [String] = []
        var undecryptable: [String] = []
        var disagreements: [String] = []
        var acknowledgedTotal = 0
        var inFlightApplied = 0
        var inFlightTotal = 0
        var temporaryBeforeCleanup = 0
        var temporaryAfterCleanup: [String] = []
        // A long-lived handle (a service that keeps its vault open) does the writing after each round:
        // it must clean up after writers that died long after its own first write.
        let longLived = try Vault.open(at: path, client: try testClient(app))
        let started = monotonicMilliseconds()
        for iteration in 0..<iterations {
            let children = try writers.enumerated().map { index, writer in try start(index, writer, iteration) }
            usleep(UInt32.random(in: 30_000...150_000))
            for child in children.shuffled() {
                child.kill()
                if Bool.random() { usleep(UInt32.random(in: 0...3000)) }
            }
            var journals: [WriterJournal] = []
            for child in children {
                let result = child.finish()
                if result.status != 128 + SIGKILL && result.status != SIGKILL {
                    Issue.record("writer ended with \(result.status) before the kill: \(result.errors)")
                }
                journals.append(WriterJournal(output: result.output))
            }
            temporaryBeforeCleanup += temporaryFiles(in: path).count
            // Reopen as a new process would: a fresh handle, reads first.
            let vault = try Vault.open(at: path, client: try testClient(app))
            let state = try crashState(vault)
            disagreements += state.pointLookupDisagreements.map { "iteration \(iteration): \($0)" }
            for (writer, journal) in zip(writers, journals) {
                let prefix = writer + "-"
                let (before, after) = journal.outcomes(of: model, prefix: prefix)
                acknowledgedTotal += journal.acknowledged.count
                let actual = state.scan.filter { $0.key.hasPrefix(prefix) }
                if journal.inFlight != nil { inFlightTotal += 1 }
                if actual == before {
                    // fine: the unacknowledged operation did not happen (or changed nothing)
                } else if actual == after {
                    inFlightApplied += 1
                } else {
                    lost.append("iteration \(iteration) \(writer): expected \(before) or \(after), found \(actual)")
                }
                WriterJournal.settle(&model, prefix: prefix, at: actual)
            }
            // A writer runs again: it finishes interrupted moves and removes stale temp files.
            try longLived.set(Data("\(iteration)"), for: try ItemKey(service: "settle", account: "settle"))
            temporaryAfterCleanup += temporaryFiles(in: path).map { "iteration \(iteration): \($0)" }
            let decrypted = try decryptEveryItem(path)
            undecryptable += decrypted.failures
        }
        let seconds = (monotonicMilliseconds() - started) / 1000
        let slots = groupCommitSlotsUsed(in: path, group: app)
        figure(
            figureName,
            "\(iterations) SIGKILL iterations of 4 writers, \(acknowledgedTotal) acknowledged operations, "
                + (slots > 0 ? "\(slots) group-commit slots used, " : "")
                + "\(lost.count) lost, \(undecryptable.count) undecryptable files, "
                + "\(temporaryAfterCleanup.count) temp files after a writer ran again "
                + "(\(temporaryBeforeCleanup) seen right after kills), \(inFlightApplied)/\(inFlightTotal) "
                + "unacknowledged operations found applied, \(disagreements.count) point/scan disagreements, "
                + String(format: "%.0f s", seconds))
        #expect(lost.isEmpty, "\(lost.prefix(5))")
        #expect(undecryptable.isEmpty, "\(undecryptable.prefix(5))")
        #expect(temporaryAfterCleanup.isEmpty, "\(temporaryAfterCleanup.prefix(5))")
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
        #expect(acknowledgedTotal > iterations)
        if groupCommit { #expect(slots > 0, "no set went through group commit") }
    }

    /// 4 writer processes setting and deleting one key each, in a vault that keeps 5 versions, are
    /// SIGKILLed at random points, also between a version's write and its pruning: after each round
    /// every key's history is exactly the last 6 of its changes (the current one and 5 before it, a
    /// deletion's tombstone counting as one), numbered from 1 without a gap: no version lost or
    /// duplicated. Once a writer ran again, no key has more version files than the bound and a
    /// tombstone's worth.
    @Test func killedWritersLoseNoVersion() throws {
        try withTemporaryDirectory("crash-history") { dir in
            let path = dir.path + "/vault"
            let setup = try Vault.create(at: path, client: try testClient())
            try setup.setVersionsKept(5)
            let writers = (0..<4).map { "w\($0)" }
            // Every change each key has had, in order: its value, or nil for a deletion.
            var changes: [String: [String?]] = [:]
            var problems: [String] = []
            var versionsChecked = 0
            let longLived = try Vault.open(at: path, client: try testClient())
            let iterations = Sizes.crashIterations / 4
            for iteration in 0..<iterations {
                let children = try writers.enumerated().map { index, writer in
                    try Helper([
                        "history-writer", path, testApp, writer, String(iteration * 1_000_000 + index * 100_000),
                    ])
                }
                usleep(UInt32.random(in: 30_000...150_000))
                for child in children.shuffled() {
                    child.kill()
                    if Bool.random() { usleep(UInt32.random(in: 0...3000)) }
                }
                let vault = try Vault.open(at: path, client: try testClient())
                for (writer, child) in zip(writers, children) {
                    let journal = WriterJournal(output: child.finish().output)
                    let key = try ItemKey(service: "history", account: writer)
                    for operation in journal.acknowledged {
                        if case .set(_, let value) = operation { changes[writer, default: []].append(value) }
                        if case .delete = operation { changes[writer, default: []].append(nil) }
                    }
                    let current = try vault.string(for: key)
                    switch journal.inFlight {
                    case .set(_, let value) where current == value: changes[writer, default: []].append(value)
                    case .delete where current == nil && changes[writer]?.last != nil:
                        changes[writer, default: []].append(nil)
                    default: break
                    }
                    let all = changes[writer] ?? []
                    guard !all.isEmpty else { continue }
                    let history = try vault.history(of: key)
                    let expectedNumbers = Array(UInt64(max(1, all.count - 5))...UInt64(all.count))
                    let expectedValues = Array(all.suffix(expectedNumbers.count))
                    var values: [String?] = []
                    for version in history {
                        values.append(
                            version.isDeletion
                                ? nil
                                : try vault.data(for: key, version: version.number).map {
                                    String(decoding: $0, as: UTF8.self)
                                })
                    }
                    versionsChecked += history.count
                    if history.map(\.number) != expectedNumbers || values != expectedValues {
                        problems.append(
                            "iteration \(iteration) \(writer): versions \(history.map(\.number)) \(values), expected "
                                + "\(expectedNumbers) \(expectedValues)")
                    }
                }
                // A writer runs again: it prunes what a killed writer left past the bound.
                try longLived.set(Data("\(iteration)"), for: try ItemKey(service: "settle", account: "settle"))
                let files = try FileManager.default.contentsOfDirectory(atPath: path + "/groups/" + testApp)
                let versionFiles = Dictionary(grouping: files.filter { $0.hasPrefix(".v.") }) { $0.dropLast(17) }
                if let crowded = versionFiles.values.first(where: { $0.count > 6 }) {
                    problems.append("iteration \(iteration): \(crowded.count) version files of one item")
                }
            }
            #expect(problems.isEmpty, "\(problems.prefix(5))")
            #expect(versionsChecked > iterations)
            figure(
                "crash-history",
                "\(iterations) SIGKILL iterations of 4 writers, \(changes.values.map(\.count).reduce(0, +)) changes, "
                    + "\(versionsChecked) versions checked, \(problems.count) problems")
        }
    }

    /// 4 processes incrementing one shared counter (`Vault.modify`) are SIGKILLed at random points: the
    /// counter is at least the number of acknowledged increments and at most that plus the ones in
    /// flight, every time.
    @Test func killedIncrementersLoseNoAcknowledgedIncrement() throws {
        try withTemporaryDirectory("crash-increment") { dir in
            let path = dir.path + "/vault"
            _ = try Vault.create(at: path, client: try testClient())
            let key = try ItemKey(service: "counter", account: "value")
            var acknowledged = 0
            var inFlight = 0
            var lower = 0
            var violations: [String] = []
            let iterations = Sizes.crashIterations / 4
            for iteration in 0..<iterations {
                let children = try (0..<4).map { _ in try Helper(["crash-increment", path, testApp]) }
                usleep(UInt32.random(in: 30_000...150_000))
                for child in children.shuffled() { child.kill() }
                for child in children {
                    let lines = child.finish().output.split(separator: "\n")
                    let acks = lines.filter { $0 == "ack" }.count
                    let starts = lines.filter { $0 == "start" }.count
                    acknowledged += acks
                    inFlight += starts - acks
                }
                let value = Int(try Vault.open(at: path, client: try testClient()).string(for: key) ?? "0") ?? -1
                // Every acknowledged increment is in; of the unacknowledged ones, any number may be.
                if value < acknowledged + lower || value > acknowledged + inFlight {
                    violations.append(
                        "iteration \(iteration): counter \(value), acknowledged \(acknowledged), in flight \(inFlight)")
                }
                lower = value - acknowledged
            }
            #expect(violations.isEmpty, "\(violations.prefix(3))")
            figure(
                "crash-increments",
                "\(iterations) SIGKILL iterations of 4 incrementing processes: \(acknowledged) acknowledged increments, "
                    + "counter \(acknowledged + lower) (\(lower) of \(inFlight) unacknowledged ones applied), "
                    + "\(violations.count) violations")
        }
    }
}
