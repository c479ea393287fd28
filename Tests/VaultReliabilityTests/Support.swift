import Foundation
import Synchronization
import Testing
import Vault
import VaultStore
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Sizes of the harnesses: small enough for CI by default, the long versions with `VAULT_STRESS=1`
/// (`scripts/stress`), and each one settable on its own.
enum Sizes {
    static let stress = ProcessInfo.processInfo.environment["VAULT_STRESS"] == "1"

    static func value(_ name: String, ci: Int, stress long: Int) -> Int {
        if let text = ProcessInfo.processInfo.environment[name], let value = Int(text) { return value }
        return stress ? long : ci
    }

    /// SIGKILL iterations of the 4-writer crash test.
    static let crashIterations = value("VAULT_CRASH_ITERATIONS", ci: 200, stress: 1000)
    /// Operations per process in the 8-process tests.
    static let operationsPerProcess = value("VAULT_CONCURRENCY_OPS", ci: 200, stress: 1000)
    /// Directory-for-symlink swaps raced against a writer.
    static let symlinkRaces = value("VAULT_SYMLINK_RACES", ci: 1000, stress: 10000)
    /// Encryptions checked for a repeated nonce.
    static let nonces = value("VAULT_NONCES", ci: 100_000, stress: 1_000_000)
    /// Nonces drawn by each side of a fork.
    static let forkNonces = value("VAULT_FORK_NONCES", ci: 10_000, stress: 100_000)
    /// Shutdown-and-remount rounds per file system in the power-loss test.
    static let powerLossRounds = value("VAULT_POWER_LOSS_ROUNDS", ci: 3, stress: 20)
}

/// Prints a figure in a form `scripts/stress` collects ("FIGURE name: text").
func figure(_ name: String, _ text: String) {
    print("FIGURE \(name): \(text)")
}

/// A fresh temp directory, removed by `remove()`.
struct TestDirectory {
    let path: String

    init(_ label: String = "rel") throws {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("vault-\(label)-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() {
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        try? FileManager.default.removeItem(atPath: path)
    }
}

let testApp = "com.example.reliability"

func testClient(_ app: String = testApp) throws -> Client {
    try Client(applicationIdentifier: app)
}

/// The `vault-test-helper` executable built next to the test bundle.
let helperPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("vault-test-helper").path

/// A running helper process whose standard output and error are pipes.
final class Helper {
    let process = Process()
    let output = Pipe()
    let errors = Pipe()

    let input = Pipe()

    init(_ arguments: [String], environment: [String: String]? = nil, standardInput: Bool = false) throws {
        process.executableURL = URL(fileURLWithPath: helperPath)
        if standardInput { process.standardInput = input }
        process.arguments = arguments
        if let environment { process.environment = environment }
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }

    /// Writes `text` to the process's standard input (when it was started with one).
    func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    func kill() {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
    }

    /// Waits for the process; returns its status and everything it wrote.
    func finish() -> (status: Int32, output: String, errors: String) {
        let errorData = Mutex<Data>(Data())
        let errorHandle = errors.fileHandleForReading
        let thread = Thread { errorData.withLock { $0 = errorHandle.readDataToEndOfFile() } }
        thread.start()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        while thread.isExecuting || !thread.isFinished { usleep(1000) }
        let err = errorData.withLock { $0 }
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    /// Reads standard output until it contains `marker` (or the process ends).
    func waitFor(_ marker: String) -> String {
        var seen = ""
        while !seen.contains(marker) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        return seen
    }
}

/// Runs a helper to the end.
@discardableResult
func runHelper(_ arguments: [String], environment: [String: String]? = nil) throws -> (
    status: Int32, output: String, errors: String
) {
    try Helper(arguments, environment: environment).finish()
}

/// Milliseconds since an arbitrary start (CLOCK_MONOTONIC).
func monotonicMilliseconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1000 + Double(ts.tv_nsec) / 1e6
}

/// The names of temp files anywhere in the vault (the vault directory and every group directory).
func temporaryFiles(in vaultPath: String) -> [String] {
    var found: [String] = []
    let fm = FileManager.default
    for name in (try? fm.contentsOfDirectory(atPath: vaultPath)) ?? [] where name.hasPrefix(".tmp.") {
        found.append(name)
    }
    let groups = vaultPath + "/groups"
    for group in (try? fm.contentsOfDirectory(atPath: groups)) ?? [] {
        for name in (try? fm.contentsOfDirectory(atPath: groups + "/" + group)) ?? [] where name.hasPrefix(".tmp.") {
            found.append(group + "/" + name)
        }
    }
    return found
}

/// Decrypts every item file of the vault through the store; returns the number of files and the
/// failures.
func decryptEveryItem(_ vaultPath: String) throws -> (files: Int, failures: [String]) {
    let store = try VaultStore.open(at: vaultPath)
    var files = 0
    var failures: [String] = []
    for group in try store.groups() {
        for id in try store.itemIDs(in: group) {
            files += 1
            do {
                _ = try store.get(group: group, id: id)
            } catch {
                failures.append("\(group)/\(id): \(error)")
            }
        }
    }
    return (files, failures)
}

extension Data {
    init(_ text: String) { self = Data(text.utf8) }
}
