import Foundation

@testable import VaultEtcd

/// A Python HTTP server on 127.0.0.1, run from a script that prints its port on the first line of its
/// output (the fake gateway, the interposing proxy); stopped when this goes.
final class PythonHTTPServer {
    let process = Process()
    /// `http://127.0.0.1:<port>`.
    let endpoint: String

    /// Runs `script` with `arguments`; `name` names it in the error when it does not start.
    init(script: String, arguments: [String], name: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw EtcdError(.invalidRequest, "the \(name) (python3) did not start")
        }
        endpoint = "http://127.0.0.1:\(port)"
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }
}
