import Foundation
import VaultSystem

/// A fresh process's first read of one item through each face of the vault, as whole processes in the
/// same rounds: the CLI's `vault get`, the `Security` module's first `SecItemCopyMatching`
/// (`vault-security-peer get`: its open and its read) and the C API's `vault_open` + first `vault_get`
/// (scripts/capi-first-read.c, built with the system cc against `libVaultC.so`). Each round runs
/// `/bin/true` and the three once, in an order that rotates; the faces are reported against the CLI's get.
struct FirstReadBench {
    let directory: String
    let quick: Bool
    let progress: Progress

    var rounds: Int { quick ? 10 : 200 }

    /// The secret of the peer comparison (scripts/peer-comparison): 40 bytes.
    static let secret = "peer-comparison-secret-of-forty-bytes-40"

    func run() throws -> [OperationTiming] {
        guard let cli = siblingExecutable("vault") else {
            skip("no vault binary next to \(CommandLine.arguments[0]); skipped")
            return []
        }
        let vaultPath = FilePath(directory).appending("first-read-vault").string
        let environment = ["VAULT_DIR=\(vaultPath)", "VAULT_APP_ID=bench", "PATH=/usr/bin:/bin"]
        _ = try ChildProcess.run(cli, arguments: ["init"], environment: environment)
        let secretFile = FilePath(directory).appending("first-read-secret").string
        try Data(Self.secret.utf8).write(to: URL(fileURLWithPath: secretFile))
        let item = ["first-read", "account"]
        let put = try ChildProcess.run(
            cli, arguments: ["put"] + item, environment: environment, standardInputPath: secretFile)
        guard put.exitStatus == 0 else {
            skip("`vault put` exited \(put.exitStatus); skipped")
            return []
        }

        var faces: [(name: String, executable: String, arguments: [String])] = [
            ("first read: CLI vault get (process)", cli, ["get"] + item)
        ]
        if let peer = siblingExecutable("vault-security-peer") {
            faces.append(("first read: Security SecItemCopyMatching (process)", peer, ["get"] + item))
        } else {
            skip("no vault-security-peer next to \(CommandLine.arguments[0]); its row is left out")
        }
        if let program = try buildCProgram() {
            faces.append(("first read: C vault_open + vault_get (process)", program, [vaultPath, "bench"] + item))
        }
        faces = try faces.filter { face in
            let status = try ChildProcess.run(face.executable, arguments: face.arguments, environment: environment)
            if status.exitStatus != 0 { skip("\(face.name) exited \(status.exitStatus); its row is left out") }
            return status.exitStatus == 0
        }
        guard faces.first?.executable == cli else { return [] }

        progress.show("first reads (CLI, Security, C API)…")
        let floorName = "floor: /bin/true process (first-read rounds)"
        var bodies: [() throws -> Void] = [
            { _ = try ChildProcess.run("/bin/true", arguments: [], environment: environment) }
        ]
        for face in faces {
            bodies.append {
                let status = try ChildProcess.run(face.executable, arguments: face.arguments, environment: environment)
                // A read that failed part-way would time an error path, not a read.
                guard status.exitStatus == 0 else { throw BenchError("\(face.name) exited \(status.exitStatus)") }
            }
        }
        let samples = try rotated(rounds: rounds, bodies)
        let floor = OperationTiming(operation: floorName, items: 1, nanoseconds: samples[0])
        let cliGet = OperationTiming(operation: faces[0].name, items: 1, nanoseconds: samples[1])
        var results = [floor, against(cliGet, floor)]
        for (face, faceSamples) in zip(faces.dropFirst(), samples.dropFirst(2)) {
            results.append(against(OperationTiming(operation: face.name, items: 1, nanoseconds: faceSamples), cliGet))
        }
        return results
    }

    func against(_ timing: OperationTiming, _ reference: OperationTiming) -> OperationTiming {
        var timing = timing
        timing.floor = reference.operation
        timing.floorMedianNanoseconds = reference.medianNanoseconds
        timing.ratio = timing.medianNanoseconds / reference.medianNanoseconds
        return timing
    }

    /// Compiles scripts/capi-first-read.c against `VAULT_BENCH_LIBVAULT` (a path to the library), else
    /// the `libVaultC.so` beside this executable; nil (said on standard error) when the library, the
    /// source or cc is missing.
    func buildCProgram() throws -> String? {
        let library =
            ProcessInfo.processInfo.environment["VAULT_BENCH_LIBVAULT"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("libVaultC.so").path
        guard FileManager.default.fileExists(atPath: library) else {
            skip(
                "no \(library) (build the VaultC product in this configuration, or set VAULT_BENCH_LIBVAULT); the C API row is left out"
            )
            return nil
        }
        let roots = [
            FileManager.default.currentDirectoryPath,
            URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().path,
        ]
        guard
            let root = roots.first(where: {
                FileManager.default.fileExists(atPath: FilePath($0).appending("scripts/capi-first-read.c").string)
            })
        else {
            skip("no scripts/capi-first-read.c (run from the package directory); the C API row is left out")
            return nil
        }
        guard let cc = ["/usr/bin/cc", "/usr/local/bin/cc"].first(where: FileManager.default.isExecutableFile)
        else {
            skip("no cc; the C API row is left out")
            return nil
        }
        // The package's build has no SONAME and scripts/install's has libvault.so.0: under every name a
        // program could record as NEEDED, the same file.
        let libraryDirectory = FilePath(directory).appending("capi-lib").string
        try FileManager.default.createDirectory(atPath: libraryDirectory, withIntermediateDirectories: true)
        let absoluteLibrary = URL(fileURLWithPath: library).standardizedFileURL.path
        for name in ["libvault.so", "libvault.so.0"] {
            let link = FilePath(libraryDirectory).appending(name).string
            try? FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: absoluteLibrary)
        }
        let program = FilePath(directory).appending("capi-first-read").string
        let arguments = [
            "-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", FilePath(root).appending("include").string,
            "-o", program, FilePath(root).appending("scripts/capi-first-read.c").string,
            "-L", libraryDirectory, "-Wl,-rpath," + libraryDirectory, "-lvault",
        ]
        let compiled = try ChildProcess.run(cc, arguments: arguments)
        guard compiled.exitStatus == 0 else {
            skip("\(cc) \(arguments.joined(separator: " ")) exited \(compiled.exitStatus); the C API row is left out")
            return nil
        }
        // Which build of the library the row is of: the package's and scripts/install's start differently.
        FileHandle.standardError.write(Data("vault-bench: first reads: the C API row uses \(absoluteLibrary)\n".utf8))
        return program
    }

    func skip(_ reason: String) {
        progress.show("")
        FileHandle.standardError.write(Data("vault-bench: first reads: \(reason)\n".utf8))
    }
}
