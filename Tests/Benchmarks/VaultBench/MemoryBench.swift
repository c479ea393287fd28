import Foundation
import Vault

/// Peak memory of processes that use one bench vault, each a fresh `vault-bench` process in a hidden
/// mode, so that nothing of the bench's own state is counted: issue 19's targets are a process that
/// opens a vault and reads 1,000 random items (< 32 MiB) and one that runs a full query returning
/// attributes (< 128 MiB at 100,000 items).
enum MemoryBench {
    static let randomReads = 1000
    static let readTargetKiB = 32 * 1024
    static let queryTargetKiB = 128 * 1024

    /// A peak RSS row: its name, its value in KiB, and its target in KiB.
    struct Row {
        let name: String
        let kibibytes: Int
        let targetKiB: Int?
    }

    /// The rows for the vault at `path` of `items` items named `item-0` … (service `bench`), for the
    /// rows that `selected` accepts.
    static func rows(vaultPath path: String, items: Int, selected: (String) -> Bool) throws -> [Row] {
        var rows: [Row] = []
        let reads = "peak RSS process: open vault of \(items) items, \(randomReads) random gets"
        if selected(reads) {
            let output = try Shell.capture(
                CommandLine.arguments[0], ["--memory-reads", path, String(items), String(randomReads)])
            rows.append(Row(name: reads, kibibytes: kibibytes(output), targetKiB: readTargetKiB))
        }
        // As many random gets as the vault has items: the caches' byte bounds, not the vault's size, cap it.
        let all = "peak RSS process: open vault of \(items) items, \(items) random gets"
        if items > randomReads, selected(all) {
            let output = try Shell.capture(
                CommandLine.arguments[0], ["--memory-reads", path, String(items), String(items)])
            rows.append(Row(name: all, kibibytes: kibibytes(output), targetKiB: nil))
        }
        let query = "peak RSS process: open vault of \(items) items, one full query (attributes)"
        if selected(query) {
            let output = try Shell.capture(CommandLine.arguments[0], ["--hold-vault", path])
            rows.append(Row(name: query, kibibytes: kibibytes(output), targetKiB: queryTargetKiB))
        }
        return rows
    }

    static func kibibytes(_ output: String) -> Int {
        Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// `--memory-reads PATH ITEMS COUNT`: opens the vault, gets `count` items chosen at random (with
    /// a fixed seed) among `item-0` … `item-(items-1)`, each with its secret, and prints the peak RSS.
    static func readRandom(path: String, items: Int, count: Int) throws {
        let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "bench"))
        var generator = SplitMix64(seed: 19)
        for _ in 0..<count {
            let account = "item-\(Int(generator.next() % UInt64(max(items, 1))))"
            _ = try vault.copyMatching(.genericPassword(service: "bench", account: account), returning: .data)
        }
        print(peakResidentKiB())
    }

    /// `--hold-vault PATH`: opens the vault, runs one query over every item returning attributes (as
    /// `copyMatching` does by default), and prints the peak RSS while the results are still held.
    static func queryAll(path: String) throws {
        let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "bench"))
        let results = try vault.copyMatching(.genericPassword(service: "bench", limit: .all))
        print(peakResidentKiB())
        withExtendedLifetime(results) {}
    }

    /// VmHWM of this process, in KiB.
    static func peakResidentKiB() -> String {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return String(line.split(separator: " ").dropFirst().first ?? "0")
    }
}

/// A small seeded generator, so that every run reads the same items.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
