import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import Vault
@testable import VaultStore

#if canImport(Glibc)
    import Glibc
#endif

/// What one faulted operation did: the state before and after, as the keys' values.
enum FaultedOperation: String, CaseIterable, Sendable {
    case put, update, move, delete

    static let keys = ["k1", "k2", "k3"]

    /// k1 = "old", k2 absent, k3 absent.
    static func baseline(_ vault: Vault) throws {
        try vault.set(Data("old"), for: try key("k1"))
        for name in ["k2", "k3"] { try vault.remove(try key(name)) }
    }

    static func key(_ name: String) throws -> ItemKey { try ItemKey(service: "fault", account: name) }

    func run(_ vault: Vault) throws {
        switch self {
        case .put: try vault.set(Data("new"), for: try Self.key("k2"))
        case .update: try vault.set(Data("new"), for: try Self.key("k1"))
        case .move:
            var attributes = ItemAttributes()
            attributes.account = "k3"
            try vault.update(
                .genericPassword(service: "fault", account: "k1"), with: ItemChanges(attributes: attributes))
        case .delete: try vault.remove(try Self.key("k1"))
        }
    }

    var before: [String: String] { ["k1": "old"] }

    var after: [String: String] {
        switch self {
        case .put: return ["k1": "old", "k2": "new"]
        case .update: return ["k1": "new"]
        case .move: return ["k3": "old"]
        case .delete: return [:]
        }
    }

    static func state(_ vault: Vault) throws -> [String: String] {
        var state: [String: String] = [:]
        for name in keys {
            if let value = try vault.string(for: try key(name)) { state[name] = value }
        }
        return state
    }
}

struct FaultCase: CustomStringConvertible, Sendable {
    let operation: SystemOperation
    let occurrence: Int
    let effect: FaultEffect
    let persistent: Bool
    var description: String {
        "\(operation) #\(occurrence) \(effect) \(persistent ? "persistent" : "once")"
    }
}

/// Every system call of a put, update, move, delete and init failed once and persistently (EIO,
/// ENOSPC, EFBIG, short writes): the error names the cause, the vault holds the old state (or, for a
/// failure after the commit point, the new one, and says so), no temp file remains, and the next
/// operation succeeds once the fault is gone. Then a real full disk (tmpfs) and `ulimit -f`.
@Suite(.serialized) struct FaultTests {
    static let effects: [FaultEffect] = [.fail(.ioError), .fail(.noSpace), .fail(.fileTooLarge)]

    func cases(for counts: [SystemOperation: Int]) -> [FaultCase] {
        var result: [FaultCase] = []
        for (op, count) in counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) where count > 0 {
            for occurrence in 1...count {
                for persistent in [false, true] {
                    for effect in Self.effects where Self.canFail(op, with: effect) {
                        result.append(
                            FaultCase(operation: op, occurrence: occurrence, effect: effect, persistent: persistent))
                    }
                    if op == .write {
                        result.append(
                            FaultCase(
                                operation: op, occurrence: occurrence, effect: .shortWrite, persistent: persistent))
                    }
                }
            }
        }
        return result
    }

    /// Only errors the kernel can return for the call: EIO from any of them, ENOSPC from calls that
    /// allocate (open with O_CREAT, write, fsync, close, mkdir, rename, link, symlink), EFBIG from write.
    static func canFail(_ op: SystemOperation, with effect: FaultEffect) -> Bool {
        switch effect {
        case .fail(.ioError): return true
        case .fail(.noSpace): return [.open, .write, .fsync, .close, .mkdir, .rename, .link, .symlink].contains(op)
        case .fail(.fileTooLarge): return op == .write
        default: return true
        }
    }

    static func counts(_ plan: FaultPlan) -> [SystemOperation: Int] {
        var counts: [SystemOperation: Int] = [:]
        for op in SystemOperation.allCases { counts[op] = plan.count(of: op) }
        return counts
    }

    /// Each operation as a lone writer does it (the write under the lock), and with `groupCommit` as one
    /// that has seen other writers: puts and updates then go through group commit (`PreparedItemWrite`),
    /// where a failure while the write is prepared makes it fall back to the write under the lock, and
    /// one of the shared directory fsync comes after the commit point.
    @Test(arguments: FaultedOperation.allCases, [false, true])
    func everyCallOfAnOperationFailsCleanly(operation: FaultedOperation, groupCommit: Bool) throws {
        try withTemporaryDirectory("faults") { dir in
            let path = dir.path + "/vault"
            let setup = try Vault.create(at: path, client: try testClient())
            try FaultedOperation.baseline(setup)
            // With group commit each handle writes as one that has seen other writers in the group, so that
            // its sets are prepared before the lock.
            func open() throws -> Vault {
                let vault = try Vault.open(at: path, client: try testClient())
                if groupCommit {
                    let group = try GroupName(testApp)
                    vault.engine.store.groupCommit.withLock {
                        $0.preparedWritesLeft[group] = VaultStore.sharedWriteMemory
                    }
                }
                return vault
            }
            // Count the calls of one operation on a fresh handle (as a fresh process would make them).
            let counting = FaultPlan.counting()
            let probe = try open()
            try FaultInjection.withPlan(counting) { try operation.run(probe) }
            let all = cases(for: Self.counts(counting))
            // Neither the generation record nor the kept version may cost an fsync: a put or update is
            // still two (the file, then the directory), and so is a delete (its tombstone, then the
            // directory).
            let expectedFsyncs: [FaultedOperation: Int] = [.put: 2, .update: 2, .delete: 2]
            if let expected = expectedFsyncs[operation] { #expect(counting.count(of: .fsync) == expected) }
            var failedOld = 0
            var failedNew: [String] = []
            var succeeded = 0
            var tolerated = Set<String>()
            var problems: [String] = []
            for c in all {
                try FaultedOperation.baseline(setup)
                let vault = try open()
                let plan = FaultPlan(c.operation, occurrence: c.occurrence, effect: c.effect, persistent: c.persistent)
                var failure: VaultError?
                do {
                    try FaultInjection.withPlan(plan) { try operation.run(vault) }
                } catch let error as VaultError {
                    failure = error
                }
                let state = try FaultedOperation.state(try Vault.open(at: path, client: try testClient()))
                let context = "\(operation) with \(c): \(failure.map { "\($0)" } ?? "no error")"
                if let failure {
                    if case .fail(let errno) = c.effect, !failure.message.contains(errno.description) {
                        problems.append("error does not name the cause: \(context)")
                    }
                    if state == operation.before {
                        failedOld += 1
                    } else if state == operation.after {
                        failedNew.append("\(c.operation) #\(c.occurrence)")
                    } else {
                        problems.append("state \(state) is neither old nor new: \(context)")
                    }
                } else {
                    succeeded += 1
                    if case .shortWrite = c.effect {
                        tolerated.insert("short writes")
                    } else {
                        tolerated.insert("\(c.operation) #\(c.occurrence)")
                    }
                    if state != operation.after { problems.append("no error but state \(state): \(context)") }
                }
                let temporary = temporaryFiles(in: path)
                if !temporary.isEmpty { problems.append("temp files \(temporary) after \(context)") }
                // The fault is gone: the same handle carries on.
                do {
                    try FaultedOperation.baseline(vault)
                    try operation.run(vault)
                    if try FaultedOperation.state(vault) != operation.after {
                        problems.append("the next operation did not take effect after \(context)")
                    }
                } catch {
                    problems.append("the next operation failed (\(error)) after \(context)")
                }
            }
            #expect(problems.isEmpty, "\(problems.prefix(8))")
            #expect(failedOld > 0)
            let afterCommit = Set(failedNew).sorted()
            figure(
                groupCommit ? "faults-\(operation)-group-commit" : "faults-\(operation)",
                "\(all.count) injections into \(Self.counts(counting).values.reduce(0, +)) calls: \(failedOld) failed with the "
                    + "old state, \(failedNew.count) failed after the commit point with the new state (\(afterCommit.joined(separator: ", "))), "
                    + "\(succeeded) tolerated (\(tolerated.sorted().joined(separator: ", "))); \(problems.count) problems"
            )
        }
    }

    @Test func everyCallOfInitFailsCleanly() throws {
        try withTemporaryDirectory("init-faults") { dir in
            let counting = FaultPlan.counting()
            _ = try FaultInjection.withPlan(counting) {
                try Vault.create(at: dir.path + "/probe", client: try testClient())
            }
            let all = cases(for: Self.counts(counting))
            var problems: [String] = []
            var failed = 0
            for (i, c) in all.enumerated() {
                let path = dir.path + "/v\(i)"
                let plan = FaultPlan(c.operation, occurrence: c.occurrence, effect: c.effect, persistent: c.persistent)
                do {
                    _ = try FaultInjection.withPlan(plan) { try Vault.create(at: path, client: try testClient()) }
                } catch let error as VaultError {
                    failed += 1
                    if case .fail(let errno) = c.effect, !error.message.contains(errno.description) {
                        problems.append("init with \(c): error does not name the cause: \(error)")
                    }
                }
                do {
                    let vault = try Vault.open(at: path, client: try testClient(), createIfMissing: true)
                    try vault.set(Data("works"), for: try ItemKey(service: "init"))
                    if try vault.string(for: try ItemKey(service: "init")) != "works" {
                        problems.append("init with \(c): the vault does not work afterwards")
                    }
                } catch {
                    problems.append("init with \(c): open/create afterwards failed: \(error)")
                }
                // A temp file whose removal itself failed is removed by the next writer (FORMAT.md).
                let temporary = temporaryFiles(in: path)
                if !temporary.isEmpty {
                    problems.append("init with \(c): temp files \(temporary) after the next write")
                }
            }
            #expect(problems.isEmpty, "\(problems.prefix(8))")
            figure(
                "faults-init",
                "\(all.count) injections: \(failed) failed cleanly, \(problems.count) problems; every vault usable afterwards"
            )
        }
    }

    // MARK: Real limits

    /// A 256 KiB tmpfs filled up: ENOSPC is reported, the old value stays, no temp file, and once space
    /// is freed the next write works. Needs root (mount); skipped with a message otherwise.
    @Test func aRealFullDisk() throws {
        try withTemporaryDirectory("fulldisk") { dir in
            let mountPoint = dir.path + "/mnt"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
            let mount = try Shell.run("mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", mountPoint)
            guard mount.status == 0 else {
                print(
                    "SKIP aRealFullDisk: cannot mount a tmpfs here (\(mount.output.trimmingCharacters(in: .whitespacesAndNewlines)))"
                )
                return
            }
            defer { _ = try? Shell.run("umount", mountPoint) }
            let path = mountPoint + "/vault"
            let vault = try Vault.create(at: path, client: try testClient())
            let key = try ItemKey(service: "full", account: "disk")
            try vault.set(Data("old"), for: key)
            // Fill the file system to the last block.
            let filler = FileManager.default.createFile(atPath: mountPoint + "/filler", contents: nil)
            #expect(filler)
            let handle = FileHandle(forWritingAtPath: mountPoint + "/filler")!
            let block = Data(repeating: 0x55, count: 4096)
            while (try? handle.write(contentsOf: block)) != nil {}
            try? handle.close()
            var failure: VaultError?
            do throws(VaultError) {
                try vault.set(Data(repeating: 0x41, count: 64 * 1024), for: key)
            } catch {
                failure = error
            }
            #expect(failure?.status == .io)
            #expect(failure?.message.contains("No space left on device") == true, "\(String(describing: failure))")
            #expect(try vault.string(for: key) == "old")
            #expect(temporaryFiles(in: path).isEmpty)
            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            try vault.set(Data("after"), for: key)
            #expect(try vault.string(for: key) == "after")
            figure(
                "full-disk",
                "256 KiB tmpfs filled: \(failure.map { $0.status.name } ?? "no error") naming ENOSPC, old value kept, 0 temp files, next write after freeing space succeeded"
            )
        }
    }

    /// RLIMIT_FSIZE below the item size: with SIGXFSZ ignored (the helper's decision, as the CLI's),
    /// the write fails with EFBIG and the old value stays.
    @Test func aFileSizeLimit() throws {
        try withTemporaryDirectory("fsize") { dir in
            let path = dir.path + "/vault"
            let small = try runHelper(["fsize-put", path, testApp, "100000000", "10"])
            #expect(small.output == "ok\n", "\(small)")
            let limited = try runHelper(["fsize-put", path, testApp, "65536", "200000"])
            #expect(limited.status == 0, "\(limited)")
            #expect(limited.output.hasPrefix("error errSecIO"), "\(limited.output)")
            #expect(limited.output.contains("File too large"), "\(limited.output)")
            let vault = try Vault.open(at: path, client: try testClient())
            #expect(
                try vault.data(for: try ItemKey(service: "fsize", account: "big")) == Data(repeating: 0x61, count: 10))
            #expect(temporaryFiles(in: path).isEmpty)
            let unlimited = try runHelper(["fsize-put", path, testApp, "100000000", "200000"])
            #expect(unlimited.output == "ok\n")
            figure(
                "ulimit-f",
                "RLIMIT_FSIZE 64 KiB, 200 KB item: \(limited.output.split(separator: " ").prefix(2).joined(separator: " ")) (EFBIG), old value kept, 0 temp files"
            )
        }
    }
}

/// Runs a system tool and returns its status and combined output.
enum Shell {
    static func run(_ arguments: String...) throws -> (status: Int32, output: String) {
        try run(arguments)
    }

    static func run(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
