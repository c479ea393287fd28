import Foundation
import Vault
import VaultSystem

/// The CLI as whole processes, next to `/bin/true` started the same way in the same run.
struct ProcessBench {
    let directory: String
    let quick: Bool
    let progress: Progress

    var iterations: Int { quick ? 10 : 200 }

    func run(memory: inout [String: Int]) throws -> [OperationTiming] {
        guard let cli = siblingExecutable("vault") else {
            progress.show("")
            FileHandle.standardError.write(
                Data("vault-bench: no vault binary next to \(CommandLine.arguments[0]); CLI figures skipped\n".utf8))
            return []
        }
        let vaultPath = FilePath(directory).appending("cli-vault").string
        let environment = ["VAULT_DIR=\(vaultPath)", "VAULT_APP_ID=bench", "PATH=/usr/bin:/bin"]
        _ = try ChildProcess.run(cli, arguments: ["init"], environment: environment)
        let secretFile = FilePath(directory).appending("secret").string
        try Data("s3cret-value".utf8).write(to: URL(fileURLWithPath: secretFile))
        let put = try ChildProcess.run(
            cli, arguments: ["put", "bench", "account"], environment: environment, standardInputPath: secretFile)
        guard put.exitStatus == 0 else {
            FileHandle.standardError.write(
                Data("vault-bench: `vault put` exited \(put.exitStatus); CLI figures skipped\n".utf8))
            return []
        }
        var results: [OperationTiming] = []
        var peak = 0
        // Interleaved with /bin/true, as the in-process operations are with their floors.
        func record(_ name: String, iterations: Int, _ body: () throws -> Void) throws {
            let (floor, m) = try interleaved(
                name, floor: "floor: /bin/true process", items: 1, iterations: iterations,
                { _ = try ChildProcess.run("/bin/true", arguments: [], environment: environment) },
                { _ in try body() })
            if !results.contains(where: { $0.operation == floor.operation }) { results.append(floor) }
            results.append(m)
        }
        progress.show("CLI get…")
        try record("CLI vault get (process)", iterations: iterations) {
            _ = try ChildProcess.run(cli, arguments: ["get", "bench", "account"], environment: environment)
        }
        // wait4's ru_maxrss of a child that posix_spawn started (CLONE_VM) includes this process's own
        // peak, which exec records into the child: measure through /usr/bin/time, whose forked child
        // starts from time's small image.
        let report = FilePath(directory).appending("rss").string
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/time") {
            for _ in 0..<5 {
                _ = try ChildProcess.run(
                    "/usr/bin/time", arguments: ["-f", "%M", "-o", report, cli, "get", "bench", "account"],
                    environment: environment)
                let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
                peak = max(peak, Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
            }
            memory["CLI vault get"] = peak
        } else {
            FileHandle.standardError.write(
                Data("vault-bench: no /usr/bin/time; the CLI's peak RSS is not measured\n".utf8))
        }
        progress.show("CLI put…")
        try record("CLI vault put (process)", iterations: quick ? 5 : 50) {
            _ = try ChildProcess.run(
                cli, arguments: ["put", "bench", "account"], environment: environment, standardInputPath: secretFile)
        }
        progress.show("CLI put against /bin/true and the durable-write floor…")
        results += try putOverFloor(
            cli, environment: environment, secretFile: secretFile, itemFileSize: itemFileSize(in: vaultPath))
        return results
    }

    /// A put's own cost beyond a process start, against the durable-write floor (the goal: a put at
    /// most `/bin/true` + 1.3× the floor): `/bin/true`, the CLI put and one floor write (the same
    /// size as the item file, in a directory beside the vault) interleaved, round by round. The
    /// "− /bin/true" row is each put less the median `/bin/true`; its ratio is to the floor's median.
    func putOverFloor(_ cli: String, environment: [String], secretFile: String, itemFileSize: Int) throws
        -> [OperationTiming]
    {
        let floors = try Floors(directory: FilePath(directory).appending("cli-floor").string, fileSize: itemFileSize)
        var trues: [Double] = []
        var puts: [Double] = []
        var writes: [Double] = []
        for i in 0..<(quick ? 5 : 100) {
            trues += try time(1) { _ in _ = try ChildProcess.run("/bin/true", arguments: [], environment: environment) }
            puts += try time(1) { _ in
                _ = try ChildProcess.run(
                    cli, arguments: ["put", "bench", "account"], environment: environment,
                    standardInputPath: secretFile)
            }
            writes += try time(1) { _ in try floors.durableWrite(i) }
        }
        let floor = OperationTiming(
            operation: "floor: durable write (beside the CLI vault)", items: 1, nanoseconds: writes)
        let start = OperationTiming(operation: "floor: /bin/true process (with the put)", items: 1, nanoseconds: trues)
        var put = OperationTiming(
            operation: "CLI vault put (process) − /bin/true", items: 1,
            nanoseconds: puts.map { $0 - start.medianNanoseconds })
        put.floor = floor.operation
        put.floorMedianNanoseconds = floor.medianNanoseconds
        put.ratio = put.medianNanoseconds / floor.medianNanoseconds
        return [start, floor, put]
    }

    /// The size of the item file of the CLI's one item (the vault holds no other), for a floor write
    /// of the same size.
    func itemFileSize(in vaultPath: String) -> Int {
        let group = FilePath(vaultPath).appending("groups").appending("bench").string
        let names = (try? FileManager.default.contentsOfDirectory(atPath: group)) ?? []
        guard let name = names.first(where: { $0.hasSuffix(".item") }),
            let size = try? FileManager.default.attributesOfItem(atPath: group + "/" + name)[.size] as? Int
        else { return 200 }
        return size
    }
}
