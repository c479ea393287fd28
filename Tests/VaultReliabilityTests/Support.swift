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

let testApp = "com.example.reliability"

func testClient(_ app: String = testApp) throws -> Client {
    try Client(applicationIdentifier: app)
}

/// Writes each single-bit flip of `original` to `path` (every bit of every byte, or the low `bits`),
/// running `check` with its name after each and `afterEachByte` after each byte's flips; then, with
/// `truncations`, each truncation, running `check` and `afterEachTruncation`.
func forEachDamage(
    of original: [UInt8], at path: String, truncations: Bool = true, afterEachByte: () throws -> Void = {},
    afterEachTruncation: () throws -> Void = {}, _ check: (String) throws -> Void
) throws {
    for index in original.indices {
        for bit in 0..<8 {
            var bytes = original
            bytes[index] ^= UInt8(1 << bit)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            try check("flip of bit \(bit) of byte \(index)")
        }
        try afterEachByte()
    }
    guard truncations else { return }
    for length in 0..<original.count {
        try Data(original[0..<length]).write(to: URL(fileURLWithPath: path))
        try check("truncation to \(length) bytes")
        try afterEachTruncation()
    }
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

/// How many of group commit's slot spares (`.slot.<k>`) are in `group` of the vault at
/// `vaultPath`: that its writers' sets went through group commit.
func groupCommitSlotsUsed(in vaultPath: String, group: String) -> Int {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: vaultPath + "/groups/" + group)) ?? []
    return names.filter { $0.hasPrefix(".slot.") && !$0.hasSuffix(".gen") }.count
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
