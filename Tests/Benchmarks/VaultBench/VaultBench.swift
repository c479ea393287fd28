// `swift run -c release vault-bench [--items 1000,10000] [--quick] [--json] [--dir DIR]
// [--rows TEXT[,TEXT...]] [--groups-only | --first-read-only | --cli-only | --fleet]`
//
// Per-operation latency of the vault next to the physical floor of the same machine, measured in the
// same run on the same directory: a durable write floor (create + write + fsync + rename + fsync of
// the directory, same size as an item file), a read floor (open + read + close of the same file plus
// one AEAD open of the same size), and a scan floor (that read for every file of a group). The group
// rows (GroupBench.swift) run once, at the smallest --items: its groups as owner and member, and
// writers in parallel groups (`vault-bench --writer PATH GROUP COUNT FIRST` is one writer process). The
// first reads (FirstReadBench.swift) are a fresh process's open and read of one item through the CLI,
// `Security` and the C API, in the same rounds. Fleet
// groups (FleetBench.swift) run only with --fleet, which runs nothing else: they need etcd (a cluster
// the bench starts, or VAULT_BENCH_ETCD), so neither a default nor a --quick run starts one.
// `--rows` measures only the per-size rows (and peak RSS rows) whose names contain one of its texts,
// with their floors, and none of the archive, CLI or group rows: for iterating on a few rows at
// 100,000 items. Peak RSS rows come from fresh processes of this binary (MemoryBench.swift).
import Foundation
import Vault
import VaultArchive
import VaultCrypto
import VaultSystem

struct Options {
    var scales: [Int] = [1000, 10_000]
    var quick = false
    var json = false
    var directory: String?
    var holdVault: String?
    var archiveOnly = false
    var profileArchive = false
    /// Only the group rows (private and shared groups, members, parallel writers): for iterating on them
    /// without the minutes the archive, scale and process rows take.
    var groupsOnly = false
    /// Only the first-read rows (FirstReadBench.swift): the CLI, `Security` and the C API as fresh
    /// processes.
    var firstReadOnly = false
    /// Only the CLI's process rows (`ProcessBench`): `vault get` and `vault put` as whole processes.
    var cliOnly = false
    /// Only the fleet-group rows (FleetBench.swift), against etcd's own tools on one cluster.
    var fleet = false
    /// With `--fleet`, the group sizes of the rows at scale (`FleetScaleBench`); none unless given.
    var fleetScales: [Int] = []
    var writer: (path: String, group: String, count: Int, first: Int)?
    /// Texts that the names of the measured rows must contain one of (nil: every row).
    var rows: [String]?
    var memoryReads: (path: String, items: Int, count: Int)?
    /// A hidden profiling mode (ProfileModes.swift): its name, a vault path, and counts.
    var profile: (mode: String, path: String, counts: [Int])?

    /// Whether the row named `name` is to be measured.
    func selects(_ name: String) -> Bool {
        rows.map { $0.contains { name.contains($0) } } ?? true
    }

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var i = 0
        func value() -> String {
            i += 1
            guard i < arguments.count else {
                FileHandle.standardError.write(Data("vault-bench: \(arguments[i - 1]) needs a value\n".utf8))
                exit(2)
            }
            return arguments[i]
        }
        while i < arguments.count {
            switch arguments[i] {
            case "--items": options.scales = value().split(separator: ",").compactMap { Int($0) }
            case "--quick": options.quick = true
            case "--json": options.json = true
            case "--dir": options.directory = value()
            case "--hold-vault": options.holdVault = value()
            case "--archive-only": options.archiveOnly = true
            case "--profile-archive": options.profileArchive = true
            case "--groups-only": options.groupsOnly = true
            case "--cli-only": options.cliOnly = true
            case "--fleet": options.fleet = true
            case "--fleet-items": options.fleetScales = value().split(separator: ",").compactMap { Int($0) }
            case "--first-read-only": options.firstReadOnly = true
            case "--fill", "--profile-gets", "--profile-query", "--profile-floor":
                let mode = arguments[i]
                let path = value()
                let counts = (0..<(mode == "--profile-gets" ? 2 : 1)).map { _ in value() }
                    .compactMap { Int($0) }
                options.profile = (mode, path, counts)
            case "--rows": options.rows = value().split(separator: ",").map(String.init)
            case "--memory-reads":
                let (path, items, count) = (value(), value(), value())
                guard let items = Int(items), let count = Int(count), items > 0, count >= 0 else {
                    FileHandle.standardError.write(
                        Data("vault-bench: --memory-reads ITEMS COUNT are not counts\n".utf8))
                    exit(2)
                }
                options.memoryReads = (path, items, count)
            case "--writer":
                let (path, group, count, first) = (value(), value(), value(), value())
                guard let count = Int(count), count >= 0, let first = Int(first), first >= 0 else {
                    FileHandle.standardError.write(
                        Data("vault-bench: --writer COUNT FIRST are not counts: \(count) \(first)\n".utf8))
                    exit(2)
                }
                options.writer = (path, group, count, first)
            case "-h", "--help":
                print(
                    "usage: vault-bench [--items N[,N...]] [--quick] [--json] [--dir DIR] [--rows TEXT[,TEXT...]]"
                        + " [--archive-only | --groups-only | --first-read-only | --cli-only | --fleet]")
                exit(0)
            default:
                FileHandle.standardError.write(Data("vault-bench: unknown argument \(arguments[i])\n".utf8))
                exit(2)
            }
            i += 1
        }
        if options.quick { options.scales = [200] }
        return options
    }
}

struct Report: Encodable {
    var machine: String
    /// /proc/loadavg when the run started and when it ended: other work on the machine skews timings.
    var loadAtStart = VaultBench.loadAverage()
    var loadAtEnd = ""
    var measurements: [OperationTiming] = []
    var memory: [String: Int] = [:]
    /// The targets of some of `memory`'s rows, in KiB (issue 19).
    var memoryTargets: [String: Int] = [:]
    /// Encoded sizes of the archive comparison's payloads, in bytes.
    var archiveSizes: [String: Int] = [:]
    /// Throughput of one way of working against another (higher is faster), by what is compared.
    var throughputRatios: [String: Double] = [:]
    /// The fleet goals of issue 17, each with the figure that answers it.
    var goals: [String] = []
}

@main
struct VaultBench {
    static func main() throws {
        let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
        if let path = options.holdVault {
            try MemoryBench.queryAll(path: path)
            return
        }
        if let profile = options.profile, let first = profile.counts.first {
            switch profile.mode {
            case "--fill": try ProfileModes.fill(path: profile.path, items: first)
            case "--profile-gets": try ProfileModes.gets(path: profile.path, items: first, count: profile.counts.last!)
            case "--profile-floor": try ProfileModes.floor(directory: profile.path, count: first)
            default: try ProfileModes.queries(path: profile.path, count: first)
            }
            return
        }
        if let reads = options.memoryReads {
            try MemoryBench.readRandom(path: reads.path, items: reads.items, count: reads.count)
            return
        }
        if let writer = options.writer {
            try ParallelWriters.write(path: writer.path, group: writer.group, count: writer.count, first: writer.first)
            return
        }
        let base =
            options.directory
            ?? FilePath(FileManager.default.currentDirectoryPath).appending(".build/vault-bench").string
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        let runDirectory = FilePath(base).appending("run-\(ProcessInfo.processInfo.processIdentifier)").string
        try? FileManager.default.removeItem(atPath: runDirectory)
        try FileManager.default.createDirectory(atPath: runDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: runDirectory) }

        if options.profileArchive {
            let row = try compareArchives(iterations: 100_000, profileOnly: true)[0]
            print(String(format: "VaultArchive Credentials encode+decode: %.2f µs", row.ns / 1000))
            return
        }
        var report = Report(machine: machineDescription())
        let progress = Progress(enabled: !options.json && isatty(2) == 1)
        if options.fleet {
            let fleet = try FleetBench(
                directory: FilePath(runDirectory).appending("fleet").string, quick: options.quick, progress: progress,
                scales: options.fleetScales
            ).run()
            report.measurements = fleet.timings
            report.goals = fleet.goals
            progress.clear()
            report.loadAtEnd = loadAverage()
            try output(report, json: options.json)
            return
        }
        if options.firstReadOnly {
            report.measurements = try FirstReadBench(directory: runDirectory, quick: options.quick, progress: progress)
                .run()
            progress.clear()
            try output(report, json: options.json)
            return
        }
        if options.cliOnly {
            report.measurements = try ProcessBench(directory: runDirectory, quick: options.quick, progress: progress)
                .run(memory: &report.memory)
            progress.clear()
            try output(report, json: options.json)
            return
        }
        if !options.groupsOnly && options.rows == nil {
            progress.show("archive coders…")
            let archive = archiveTimings(try compareArchives(iterations: options.quick ? 500 : 20_000))
            report.measurements += archive.timings
            report.archiveSizes = archive.sizes
        }
        for scale in options.archiveOnly || options.groupsOnly ? [] : options.scales {
            let bench = try ScaleBench(
                directory: FilePath(runDirectory).appending("items-\(scale)").string, items: scale,
                quick: options.quick, progress: progress, selected: options.selects)
            report.measurements += try bench.run()
            for row in try bench.memory() {
                report.memory[row.name] = row.kibibytes
                if let target = row.targetKiB { report.memoryTargets[row.name] = target }
            }
        }
        if !options.archiveOnly && options.rows == nil {
            if !options.groupsOnly {
                report.measurements += try ProcessBench(
                    directory: runDirectory, quick: options.quick, progress: progress
                ).run(memory: &report.memory)
                report.measurements += try FirstReadBench(
                    directory: runDirectory, quick: options.quick, progress: progress
                ).run()
            }
            let scale = options.scales.min() ?? 1000
            let groups = try GroupBench(
                directory: FilePath(runDirectory).appending("format2-\(scale)").string, items: scale,
                quick: options.quick, progress: progress
            ).run()
            report.measurements += groups.timings
            let writers = "\(ParallelWriters.processes) writer processes"
            report.throughputRatios["\(writers) in their own groups / 1 in one group (target ≥ 3×)"] =
                groups.ownGroups
            report.throughputRatios["\(writers) in one group / 1 in one group (target ≥ 1.5×)"] = groups.oneGroup
        }
        progress.clear()
        report.loadAtEnd = loadAverage()
        try output(report, json: options.json)
    }

    /// The first three fields of /proc/loadavg (1, 5 and 15 minutes).
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return text.split(separator: " ").prefix(3).joined(separator: " ")
    }

    static func output(_ report: Report, json: Bool) throws {
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            printTable(report)
        }
    }

    static func machineDescription() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
            .first { $0.hasPrefix("model name") }?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces)
        return "\(cpu ?? "unknown CPU"), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }

    static func printTable(_ report: Report) {
        print("machine: \(report.machine)")
        print("load average at start: \(report.loadAtStart); at end: \(report.loadAtEnd)")
        let width = max(50, (report.measurements.map(\.operation.count).max() ?? 0) + 2)
        print(
            "operation".padding(toLength: width, withPad: " ", startingAt: 0) + "items".leftPad(8)
                + "median".leftPad(11)
                + "p90".leftPad(11) + "p99".leftPad(11) + "ops/s".leftPad(10) + "  ratio to floor")
        for m in report.measurements {
            let ratio =
                m.ratio.map {
                    String(
                        format: "%.2f× %@ (%@)", $0, m.floor ?? "",
                        formatDuration(m.floorMedianNanoseconds ?? 0))
                } ?? ""
            print(
                m.operation.padding(toLength: width, withPad: " ", startingAt: 0) + String(m.items).leftPad(8)
                    + formatDuration(m.medianNanoseconds).leftPad(11) + formatDuration(m.p90Nanoseconds).leftPad(11)
                    + formatDuration(m.p99Nanoseconds).leftPad(11) + String(format: "%.0f", m.opsPerSecond).leftPad(10)
                    + "  " + ratio)
        }
        for (name, bytes) in report.archiveSizes.sorted(by: { $0.key < $1.key }) {
            print("encoded size \(name): \(bytes) B")
        }
        for (name, kilobytes) in report.memory.sorted(by: { $0.key < $1.key }) {
            let target = report.memoryTargets[name].map { String(format: " (target < %.0f MiB)", Double($0) / 1024) }
            print(
                "\(name.hasPrefix("peak RSS") ? "" : "peak RSS ")\(name): \(String(format: "%.1f", Double(kilobytes) / 1024)) MiB\(target ?? "")"
            )
        }
        for (name, ratio) in report.throughputRatios.sorted(by: { $0.key < $1.key }) {
            print("throughput \(name): \(String(format: "%.2f", ratio))×")
        }
        for goal in report.goals {
            print("goal: \(goal)")
        }
    }
}

extension String {
    func leftPad(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

/// Progress on standard error, only on a terminal.
final class Progress {
    let enabled: Bool
    init(enabled: Bool) { self.enabled = enabled }

    func show(_ text: String) {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    }

    func clear() { show("") }
}
