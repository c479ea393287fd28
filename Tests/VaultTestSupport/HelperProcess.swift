import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `vault-test-helper` executable built next to the test bundle.
package let helperPath = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    .appendingPathComponent("vault-test-helper").path

/// A running `vault-test-helper` whose standard output and error are pipes.
package final class Helper {
    /// The process.
    package let process = Process()
    /// Its standard output.
    package let output = Pipe()
    /// Its standard error.
    package let errors = Pipe()
    /// Its standard input, when started with one.
    package let input = Pipe()

    /// Starts the helper with `arguments` (and `environment`, else this process's); with `user`, as
    /// that user with its groups (`setpriv --init-groups`, which then becomes the helper at
    /// `executable`: the pid is the helper's).
    package init(
        _ arguments: [String], environment: [String: String]? = nil, standardInput: Bool = false,
        as user: ThrowawayUser? = nil, executable: String = helperPath
    ) throws {
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments =
                ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        if standardInput { process.standardInput = input }
        if let environment { process.environment = environment }
        process.standardOutput = output
        process.standardError = errors
        try process.run()
    }

    /// The process id.
    package var pid: Int32 { process.processIdentifier }

    /// Writes `text` to the process's standard input (when it was started with one).
    package func send(_ text: String) {
        input.fileHandleForWriting.write(Data(text.utf8))
    }

    /// Sends SIGKILL.
    package func kill() {
        _ = Glibc.kill(process.processIdentifier, SIGKILL)
    }

    /// Waits for the process; returns its status and everything it wrote.
    package func finish() -> (status: Int32, output: String, errors: String) {
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

    /// Reads standard output until it contains `marker` (or the process ends); with `seconds`, a process
    /// that has not written it by then is killed (its output then ends), so that a test fails instead of
    /// hanging.
    package func waitFor(_ marker: String, killingAfter seconds: Double? = nil) -> String {
        let found = Atomic(false)
        if let seconds {
            let pid = process.processIdentifier
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
                if !found.load(ordering: .acquiring) { _ = Glibc.kill(pid, SIGKILL) }
            }
        }
        var seen = ""
        while !seen.contains(marker) {
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            seen += String(decoding: data, as: UTF8.self)
        }
        found.store(true, ordering: .releasing)
        return seen
    }
}

/// Runs the helper with `arguments` to the end.
@discardableResult
package func runHelper(_ arguments: [String], environment: [String: String]? = nil) throws -> (
    status: Int32, output: String, errors: String
) {
    try Helper(arguments, environment: environment).finish()
}
