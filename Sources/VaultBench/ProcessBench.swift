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
        let cli = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "vault"
        ).path
        guard FileManager.default.isExecutableFile(atPath: cli) else {
            progress.show("")
            FileHandle.standardError.write(Data("vault-bench: no vault binary at \(cli); CLI figures skipped\n".utf8))
            return []
        }
        let vaultPath = directory + "/cli-vault"
        let environment = ["VAULT_DIR=\(vaultPath)", "VAULT_APP_ID=bench", "PATH=/usr/bin:/bin"]
        _ = try ChildProcess.run(cli, arguments: ["init"], environment: environment)
        let secretFile = directory + "/secret"
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
        let trueFloor = OperationTiming(
            operation: "floor: /bin/true process", items: 1,
            nanoseconds: try time(iterations) {
                _ in _ = try ChildProcess.run("/bin/true", arguments: [], environment: environment)
            })
        results.append(trueFloor)
        progress.show("CLI get…")
        var get = OperationTiming(
            operation: "CLI vault get (process)", items: 1,
            nanoseconds: try time(iterations) { _ in
                let result = try ChildProcess.run(
                    cli, arguments: ["get", "bench", "account"], environment: environment)
                peak = max(peak, result.peakResidentKilobytes)
            })
        get.floor = trueFloor.operation
        get.ratio = get.medianNanoseconds / trueFloor.medianNanoseconds
        results.append(get)
        memory["CLI vault get"] = peak
        progress.show("CLI put…")
        var putMeasurement = OperationTiming(
            operation: "CLI vault put (process)", items: 1,
            nanoseconds: try time(quick ? 5 : 50) { _ in
                _ = try ChildProcess.run(
                    cli, arguments: ["put", "bench", "account"], environment: environment,
                    standardInputPath: secretFile)
            })
        putMeasurement.floor = trueFloor.operation
        putMeasurement.ratio = putMeasurement.medianNanoseconds / trueFloor.medianNanoseconds
        results.append(putMeasurement)
        return results
    }
}
