import Synchronization
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
        { [self] prompt in try self.passphrase(prompt) }
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

    func passphrase(_ prompt: String) throws -> SecureBytes {
        let isNew = prompt.hasPrefix("new ")
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
        var first = try ask(terminal, "Enter \(prompt): ")
        defer { first.wipeBytes() }
        if isNew {
            guard !first.isEmpty else { throw StoreError(.invalidName, "the new passphrase is empty") }
            var second = try ask(terminal, "Again: ")
            defer { second.wipeBytes() }
            guard first == second else { throw StoreError(.invalidName, "the two passphrases differ; nothing changed") }
        }
        return try SecureBytes(consuming: &first)
    }

    private func ask(_ terminal: FileDescriptor, _ question: String) throws -> [UInt8] {
        defer { try? terminal.writeAll(Array("\n".utf8)) }
        // The question goes out once echo is off: turning echo off discards type-ahead.
        let line = try terminal.withEchoDisabled { () throws(Errno) in
            try? terminal.writeAll(Array(question.utf8))
            return try terminal.readLine(limit: Self.maximumLength)
        }
        guard let line else { throw StoreError(.locked, "no passphrase: end of input at the prompt") }
        return line
    }

    /// The next line of `descriptor`, read up to its newline and no further: a pipe that its writer
    /// keeps open (a script that writes one passphrase and then waits) must not hang the command.
    private func next(from descriptor: FileDescriptor) throws -> SecureBytes {
        try lines.withLock { _ in
            var line: [UInt8]?
            do {
                line = try descriptor.readLine(limit: Self.maximumLength)
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
            return try SecureBytes(consuming: &line)
        }
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the bytes with zeros (best effort).
    mutating func wipeBytes() {
        for index in indices { self[index] = 0 }
    }
}
