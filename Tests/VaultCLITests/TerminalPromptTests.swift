import Foundation
import Synchronization
import Testing
import VaultSystem
import VaultTestSupport

/// Drives `vault` through a pseudo-terminal, as a person at a terminal would: the test holds the
/// primary side, reads what the program writes there (prompts, and any echo) and types into it.
final class TerminalSession: Sendable {
    let primary: FileDescriptor
    let secondary: FileDescriptor
    let transcript = Mutex<[UInt8]>([])
    let finished = Mutex(false)

    init() throws {
        (primary, secondary) = try FileDescriptor.openPseudoTerminal()
        let primary = self.primary
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 1024)
            while true {
                // EIO once every copy of the secondary side is closed.
                let n = (try? chunk.withUnsafeMutableBytes { try primary.read(into: $0) }) ?? 0
                if n <= 0 { break }
                transcript.withLock { $0 += chunk[0..<n] }
            }
            finished.withLock { $0 = true }
        }
    }

    var text: String { String(decoding: transcript.withLock { $0 }, as: UTF8.self) }

    /// Waits until the transcript contains `text` `count` times.
    func waitFor(_ needle: String, count: Int = 1, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if text.components(separatedBy: needle).count - 1 >= count { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return false
    }

    func type(_ text: String) throws {
        try primary.writeAll(Array(text.utf8))
    }

    /// Types `first`, and once asked again, `second` (`first` when nil), each ending with a newline;
    /// whether it was asked again.
    func typeTwice(_ first: String, _ second: String? = nil) throws -> Bool {
        try type(first + "\n")
        guard waitFor("Again: ") else { return false }
        try type((second ?? first) + "\n")
        return true
    }

    /// Closes the test's secondary side; the reader thread ends once the child's copies are gone too.
    func close() {
        try? secondary.close()
        let deadline = Date().addingTimeInterval(5)
        while !finished.withLock({ $0 }) && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        try? primary.close()
    }

    /// Starts `vault arguments…` with the terminal as standard input and standard error (where the
    /// prompts go), and standard output to a pipe.
    func start(_ arguments: [String], scratch: Scratch, outputToTerminal: Bool = false) throws -> Process {
        let process = Process()
        process.executableURL = vaultExecutable
        process.arguments = ["--vault", scratch.vault] + arguments
        process.environment = scratch.environment
        let terminal = FileHandle(fileDescriptor: secondary.rawValue, closeOnDealloc: false)
        process.standardInput = terminal
        process.standardError = terminal
        process.standardOutput = outputToTerminal ? terminal : Pipe()
        try process.run()
        return process
    }
}

/// Whether `process` ends (within `waitForExit`'s time) with `status`.
func exits(_ process: Process, with status: Int32) -> Bool {
    waitForExit(process) && process.terminationStatus == status
}

/// Waits at most `timeout` seconds for `process` to end; kills it if it does not, so that a hang is a
/// failure rather than a stalled run.
func waitForExit(_ process: Process, timeout: TimeInterval = 20) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return false
    }
    process.waitUntilExit()
    return true
}

/// The prompt mode of put: on a terminal the secret is typed twice, without echo.
@Suite struct TerminalPromptTests {
    @Test func theSecretIsTypedTwiceWithoutEcho() throws {
        try withScratch(initialized: true) { scratch in
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["put", "db", "app"], scratch: scratch)
            #expect(session.waitFor("Secret for service \"db\", account \"app\": "))
            #expect(try session.typeTwice("correct horse"))
            #expect(exits(process, with: 0))
            #expect(!session.text.contains("correct horse"))
            #expect(try session.secondary.isEchoEnabled())
            // The newline is the end of the entry, not part of the secret.
            #expect(try scratch.run(["get", "db", "app"]).output == Data("correct horse"))
        }
    }

    /// A prompt that fails (here: a line longer than a passphrase may be) is no passphrase: the vault
    /// opens locked (its `Always` items readable), and a command that needs the key says it is locked
    /// (exit 5), as when none is typed at all, not an I/O error.
    @Test func aFailedPassphrasePromptLeavesTheVaultLocked() throws {
        try withScratch { scratch in
            let initialized = try scratch.run(
                ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("pw\n"))
            try #require(initialized.status == 0, "\(initialized.errors)")
            let made = try scratch.run(["uuid", "--passphrase-fd", "0"], input: Data("pw\n"))
            try #require(made.status == 0, "\(made.errors)")
            let session = try TerminalSession()
            defer { session.close() }
            // Out of canonical mode, so that the terminal passes on a line longer than its 4,095-byte
            // line buffer (the prompt keeps the mode it finds, with echo off).
            let ttyName = try FileManager.default.destinationOfSymbolicLink(
                atPath: "/proc/self/fd/\(session.secondary.rawValue)")
            let stty = Process()
            stty.executableURL = URL(fileURLWithPath: "/bin/stty")
            stty.arguments = ["-F", ttyName, "-icanon", "min", "1"]
            try stty.run()
            stty.waitUntilExit()
            try #require(stty.terminationStatus == 0)
            // The passphrase is asked on /dev/tty: the terminal must be the process's controlling one.
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
            process.arguments = ["--ctty", "--wait", vaultExecutable.path, "--vault", scratch.vault, "uuid"]
            process.environment = scratch.environment
            let terminal = FileHandle(fileDescriptor: session.secondary.rawValue, closeOnDealloc: false)
            process.standardInput = terminal
            process.standardError = terminal
            process.standardOutput = Pipe()
            try process.run()
            #expect(session.waitFor("Enter passphrase"))
            try session.type(String(repeating: "x", count: 5000) + "\n")
            #expect(exits(process, with: 5), "\(process.terminationStatus)")
            // The terminal's reader may not have taken the last line yet when the process is seen exited.
            #expect(session.waitFor("is locked for it; run `vault unlock`"), "\(session.text)")
        }
    }

    @Test func entriesThatDifferStoreNothing() throws {
        try withScratch(initialized: true) { scratch in
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["add", "db"], scratch: scratch)
            #expect(session.waitFor("Secret for "))
            #expect(try session.typeTwice("first", "second"))
            #expect(exits(process, with: 2))
            // The terminal turns "\n" into "\r\n".
            #expect(session.waitFor("vault: terminal: the two entries differ; nothing was stored\r\n"))
            #expect(!session.text.contains("first") && !session.text.contains("second"))
            #expect(try session.secondary.isEchoEnabled())
            #expect(try scratch.run(["get", "db"]).status == 1)
        }
    }

    @Test func anEmptyEntryIsRefused() throws {
        try withScratch(initialized: true) { scratch in
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["put", "db"], scratch: scratch)
            #expect(session.waitFor("Secret for "))
            try session.type("\n")
            #expect(exits(process, with: 2))
            #expect(try scratch.run(["get", "db"]).status == 1)
        }
    }

    /// SIGTERM rather than SIGINT: a test run started as a background job inherits SIGINT ignored,
    /// and an ignored signal stays ignored at the prompt.
    @Test func aSignalAtThePromptRestoresEcho() throws {
        try withScratch(initialized: true) { scratch in
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["put", "db"], scratch: scratch)
            #expect(session.waitFor("Secret for "))
            // The prompt is written just before echo goes off: wait until it is off.
            let deadline = Date().addingTimeInterval(5)
            while (try? session.secondary.isEchoEnabled()) == true && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
            #expect(try session.secondary.isEchoEnabled() == false)
            process.terminate()
            #expect(waitForExit(process))
            #expect(process.terminationReason == .uncaughtSignal)
            #expect(process.terminationStatus == SIGTERM)
            #expect(try session.secondary.isEchoEnabled())
            #expect(try scratch.run(["get", "db"]).status == 1)
        }
    }
}

/// What the commands print when standard output is a terminal.
@Suite struct TerminalOutputTests {
    @Test func getEndsTheSecretWithANewlineOnlyOnATerminal() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "db"], input: Data("s3cret"))
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["get", "db"], scratch: scratch, outputToTerminal: true)
            #expect(exits(process, with: 0))
            #expect(session.waitFor("s3cret\r\n"))
            // Piped, the bytes are exact.
            #expect(try scratch.run(["get", "db"]).output == Data("s3cret"))
        }
    }

    @Test func listIsATableOnATerminal() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "database", "app", "--label", "Main"], input: Data("x"))
            try scratch.run(["put", "api"], input: Data("y"))
            let session = try TerminalSession()
            defer { session.close() }
            let process = try session.start(["ls"], scratch: scratch, outputToTerminal: true)
            #expect(exits(process, with: 0))
            #expect(session.waitFor("MODIFIED\r\n"))
            #expect(session.waitFor("\r\n", count: 3))
            let lines = session.text.components(separatedBy: "\r\n").filter { !$0.isEmpty }
            #expect(lines.count == 3)
            #expect(lines[0].hasPrefix("KIND     SERVICE   ACCOUNT  GROUP  LABEL  CREATED"))
            #expect(lines[1].hasPrefix("generic  api                vault         "))
            #expect(lines[2].hasPrefix("generic  database  app      vault  Main   "))
            #expect(!session.text.contains("\t"))
        }
    }
}

/// The secret never reaches the arguments or the environment of the process.
@Suite struct ProcessVisibilityTests {
    @Test func theSecretIsNeverInCmdlineOrEnvironDuringAPut() throws {
        try withScratch(initialized: true) { scratch in
            let secret = "pipe-secret-\(UUID().uuidString)"
            let process = Process()
            process.executableURL = vaultExecutable
            process.arguments = ["--vault", scratch.vault, "put", "--trim", "svc", "acct"]
            process.environment = scratch.environment
            let input = Pipe()
            process.standardInput = input
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            // The secret goes into the pipe, which stays open: the put is still running, blocked on
            // standard input, while /proc is read.
            try input.fileHandleForWriting.write(contentsOf: Data((secret + "\n").utf8))
            let pid = process.processIdentifier
            let proc = "/proc/\(pid)"
            // Wait until the process has the vault open and has drained the pipe.
            let deadline = Date().addingTimeInterval(10)
            var opened = false
            while Date() < deadline && !opened {
                let fds = (try? FileManager.default.contentsOfDirectory(atPath: proc + "/fd")) ?? []
                opened = fds.contains { fd in
                    ((try? FileManager.default.destinationOfSymbolicLink(atPath: proc + "/fd/" + fd)) ?? "")
                        .hasPrefix(scratch.vault)
                }
                if !opened { Thread.sleep(forTimeInterval: 0.01) }
            }
            #expect(opened)
            Thread.sleep(forTimeInterval: 0.2)
            #expect(process.isRunning)
            let cmdline = try Data(contentsOf: URL(fileURLWithPath: proc + "/cmdline"))
            let environ = try Data(contentsOf: URL(fileURLWithPath: proc + "/environ"))
            #expect(String(decoding: cmdline, as: UTF8.self).contains("put"))
            #expect(!environ.isEmpty)
            #expect(cmdline.range(of: Data(secret.utf8)) == nil)
            #expect(environ.range(of: Data(secret.utf8)) == nil)
            try input.fileHandleForWriting.close()
            #expect(exits(process, with: 0))
            #expect(try scratch.run(["get", "svc", "acct"]).text == secret)
        }
    }
}
