import Foundation
import Testing
import VaultTestSupport

/// The built `vault` executable, next to the test bundle; `VAULT_TEST_BINARY` runs the same tests on
/// another build (e.g. the static release binary).
let vaultExecutable =
    ProcessInfo.processInfo.environment["VAULT_TEST_BINARY"].map { URL(fileURLWithPath: $0) }
    ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("vault")

/// What a run of the `vault` binary gave back.
struct RunResult {
    let status: Int32
    let output: Data
    let errors: String

    var text: String { String(decoding: output, as: UTF8.self) }

    /// The standard output parsed as JSON.
    func json() throws -> Any {
        try JSONSerialization.jsonObject(with: output)
    }
}

/// A scratch directory with a vault path inside it (not created), for runs of the `vault` binary;
/// `withScratch` removes it when the test's body ends.
struct Scratch {
    let directory: TemporaryVault
    var root: String { directory.root }
    var vault: String { directory.path }

    init() throws {
        directory = try TemporaryVault("cli")
    }

    func remove() { directory.remove() }

    /// An environment with nothing of the caller's vault settings: HOME inside the scratch directory.
    var environment: [String: String] {
        ["HOME": root + "/home", "PATH": "/usr/bin:/bin"]
    }

    /// Runs `vault --vault <this vault> arguments…` with `input` on standard input.
    @discardableResult
    func run(
        _ arguments: [String], input: Data = Data(), environment extra: [String: String] = [:], vaultOption: Bool = true
    )
        throws -> RunResult
    {
        try runVault(
            (vaultOption ? ["--vault", vault] : []) + arguments, input: input,
            environment: environment.merging(extra) { $1 }, scratch: root)
    }

    /// Runs `command` with bash (so that it can close, open and redirect descriptors around `vault`),
    /// with `V` the vault binary and `D` this vault's directory in its environment.
    func shell(_ command: String, environment extra: [String: String] = [:]) throws -> RunResult {
        try runVault(
            ["-c", command], input: Data(),
            environment: environment.merging(["V": vaultExecutable.path, "D": vault]) { $1 }.merging(extra) { $1 },
            scratch: root, executable: URL(fileURLWithPath: "/bin/bash"))
    }

    /// A fresh vault.
    static func initialized() throws -> Scratch {
        let scratch = try Scratch()
        let result = try scratch.run(["init"])
        try #require(result.status == 0, "init failed: \(result.errors)")
        return scratch
    }
}

/// Runs the binary; standard input comes from a file holding `input`, and the outputs go to files, so
/// that no pipe can fill up and stall the child.
func runVault(
    _ arguments: [String], input: Data, environment: [String: String], scratch: String,
    executable: URL = vaultExecutable
) throws -> RunResult {
    let id = UUID().uuidString
    let inPath = scratch + "/stdin-\(id)"
    let outPath = scratch + "/stdout-\(id)"
    let errPath = scratch + "/stderr-\(id)"
    try input.write(to: URL(fileURLWithPath: inPath))
    _ = FileManager.default.createFile(atPath: outPath, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath, contents: nil)
    defer {
        for path in [inPath, outPath, errPath] { try? FileManager.default.removeItem(atPath: path) }
    }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.environment = environment
    let stdin = try FileHandle(forReadingFrom: URL(fileURLWithPath: inPath))
    let stdout = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
    let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    process.waitUntilExit()
    try stdin.close()
    try stdout.close()
    try stderr.close()
    let output = try Data(contentsOf: URL(fileURLWithPath: outPath))
    let errors = try String(contentsOfFile: errPath, encoding: .utf8)
    return RunResult(status: process.terminationStatus, output: output, errors: errors)
}

/// Runs `body` with a fresh scratch directory (with an initialised vault when `initialized`), removed
/// when `body` ends.
func withScratch<R>(initialized: Bool = false, _ body: (Scratch) throws -> R) throws -> R {
    let scratch = try initialized ? Scratch.initialized() : Scratch()
    defer { scratch.remove() }
    return try body(scratch)
}
