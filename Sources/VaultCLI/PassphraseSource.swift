import Synchronization
import Vault
import VaultCrypto
import VaultStore
import VaultSystem

/// Where the tool gets passphrases: from a file descriptor (`--passphrase-fd N`: one passphrase per
/// line, taken in order, for scripts), else from the terminal (`/dev/tty`, so that standard input stays
/// free for a secret), typed with echo off; a new passphrase is typed twice. Never from an argument or
/// the environment.
final class PassphraseSource: Sendable {
    let descriptor: FileDescriptor?
    let errors: FileDescriptor
    /// Serialises reads of the descriptor: one passphrase a line, in order.
    private let lines = Mutex(())

    /// The longest passphrase accepted, in bytes.
    static let maximumLength = 4096

    init(descriptor: FileDescriptor?, errors: FileDescriptor) {
        self.descriptor = descriptor
        self.errors = errors
    }

    var provider: KeySource.PassphraseProvider {
        { [self] (request) throws(StoreError) in try self.passphrase(request) }
    }

    /// Whether a passphrase can be had at all: a descriptor was given, or a terminal can be opened to
    /// ask on. Asked before a command makes anything that a failed prompt would leave behind.
    var canAsk: Bool {
        if descriptor != nil { return true }
        guard let terminal = try? FileDescriptor.currentWorkingDirectory.openAt("/dev/tty", .readWrite) else {
            return false
        }
        try? terminal.close()
        return true
    }

    /// The passphrase `request` asks for; a new one is typed twice at the terminal, and never empty.
    func passphrase(_ request: PassphraseRequest) throws(StoreError) -> SecureBytes {
        let isNew = request.purpose.isNew
        if let descriptor {
            let passphrase = try next(from: descriptor)
            if isNew, passphrase.count == 0 {
                throw StoreError(
                    .invalidName, "the new passphrase from file descriptor \(descriptor.rawValue) is empty")
            }
            return passphrase
        }
        let terminal: FileDescriptor
        do {
            terminal = try FileDescriptor.currentWorkingDirectory.openAt("/dev/tty", .readWrite)
        } catch {
            throw StoreError(
                .locked, "a passphrase is needed and there is no terminal to ask it on; give it with --passphrase-fd N")
        }
        defer { try? terminal.close() }
        // The prompt names a path, which is shown on the terminal.
        var first = try ask(terminal, "Enter \(Output.escape(request.prompt)): ")
        defer { first.wipe() }
        if isNew {
            guard !first.isEmpty else { throw StoreError(.invalidName, "the new passphrase is empty") }
            var second = try ask(terminal, "Again: ")
            defer { second.wipe() }
            guard first == second else { throw StoreError(.invalidName, "the two passphrases differ; nothing changed") }
        }
        return try secure(&first)
    }

    private func ask(_ terminal: FileDescriptor, _ question: String) throws(StoreError) -> [UInt8] {
        defer { try? terminal.writeAll(Array("\n".utf8)) }
        // The question goes out once echo is off: turning echo off discards type-ahead.
        let line: [UInt8]?
        do {
            line = try terminal.withEchoDisabled { () throws(Errno) in
                try? terminal.writeAll(Array(question.utf8))
                return try terminal.readLine(limit: Self.maximumLength)
            }
        } catch {
            // As when no passphrase is given: a vault whose prompt fails still opens locked (its
            // `Always` items readable), and a command that needs the key says it is locked.
            throw StoreError(
                .locked,
                "no passphrase: cannot read one from the terminal: \(error) (at most \(Self.maximumLength) "
                    + "bytes)", cause: (error as? Errno).map { SystemCallError(systemCall: .read, errno: $0) })
        }
        guard let line else { throw StoreError(.locked, "no passphrase: end of input at the prompt") }
        return line
    }

    /// The next line of `descriptor`, read up to its newline and no further: a pipe that its writer
    /// keeps open (a script that writes one passphrase and then waits) must not hang the command.
    private func next(from descriptor: FileDescriptor) throws(StoreError) -> SecureBytes {
        try lines.withLock { (_) throws(StoreError) in
            var line: [UInt8]?
            do {
                line = try descriptor.readLine(limit: Self.maximumLength)
            } catch  where (error as? Errno) == .badFileDescriptor {
                // Not open in this process: the command line's mistake (a usage error), not the system's.
                throw StoreError(
                    .invalidName,
                    "--passphrase-fd \(descriptor.rawValue): file descriptor \(descriptor.rawValue) is not open; give "
                        + "one the shell opens for the command, e.g. `--passphrase-fd 3 3<passphrase-file`")
            } catch {
                throw StoreError(
                    .io,
                    "cannot read a passphrase from file descriptor \(descriptor.rawValue): \(error) (at most "
                        + "\(Self.maximumLength) bytes a line)")
            }
            guard var line else {
                throw StoreError(
                    .locked, "file descriptor \(descriptor.rawValue) gave no (more) passphrases; one per line is read")
            }
            return try secure(&line)
        }
    }

    /// `bytes` moved into secure memory (and wiped).
    private func secure(_ bytes: inout [UInt8]) throws(StoreError) -> SecureBytes {
        do {
            return try SecureBytes(consuming: &bytes)
        } catch {
            throw StoreError(.cryptoUnavailable, "cannot hold a passphrase in secure memory: \(error.message)")
        }
    }
}
