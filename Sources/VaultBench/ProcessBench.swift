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
        return results
    }
}
