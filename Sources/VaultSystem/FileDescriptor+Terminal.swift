internal import CVaultSystem
internal import Glibc

/// Terminal handling for the command-line tool: is this a terminal, a prompt without echo, reading a
/// line.
extension FileDescriptor {
    /// Whether the descriptor is a terminal (`isatty`).
    package var isTerminal: Bool {
        Glibc.isatty(rawValue) == 1
    }

    /// Whether this terminal echoes what is typed; `ENOTTY` when it is not a terminal.
    package func isEchoEnabled() throws(Errno) -> Bool {
        try retryingOnInterrupt(nil) { vsys_echo_enabled(rawValue) } == 1
    }

    /// Opens a new pseudo-terminal pair, both ends close-on-exec and neither the controlling
    /// terminal: the primary side is what a terminal emulator holds, the secondary side what a
    /// program reads as its terminal. For tests and tools that drive a program through a terminal.
    package static func openPseudoTerminal() throws(Errno) -> (primary: FileDescriptor, secondary: FileDescriptor) {
        var primary: Int32 = -1
        var secondary: Int32 = -1
        _ = try retryingOnInterrupt(.open) { vsys_open_pseudo_terminal(&primary, &secondary) }
        return (FileDescriptor(rawValue: primary), FileDescriptor(rawValue: secondary))
    }

    /// Runs `body` with echo turned off on this terminal, and turns it back on afterwards, also when
    /// `body` throws or the process gets SIGINT, SIGTERM, SIGHUP or SIGQUIT meanwhile (the signal then takes its
    /// previous action; an ignored one stays ignored). Type-ahead is
    /// discarded, as getpass(3) does. Calls do not nest: a second one while echo is off is `EBUSY`.
    package func withEchoDisabled<R, E: Error>(_ body: () throws(E) -> R) throws -> R {
        _ = try retryingOnInterrupt(nil) { vsys_echo_off(rawValue) }
        let result: Result<R, E>
        do {
            result = .success(try body())
        } catch {
            result = .failure(error)
        }
        // The restore's own failure must not hide the body's.
        let restored = vsys_echo_restore() == 0 ? nil : Errno.current
        let value = try result.get()
        if let restored { throw restored }
        return value
    }

    /// Reads one line, one byte at a time so that nothing after the newline is consumed: the bytes
    /// before the `\n` (which is dropped), or nil at end of file before any byte. A line longer than
    /// `limit` bytes is `EFBIG`.
    package func readLine(limit: Int) throws(Errno) -> [UInt8]? {
        var line: [UInt8] = []
        // Grown once: a reallocation would leave copies of a passphrase in freed memory.
        line.reserveCapacity(limit + 1)
        var byte: UInt8 = 0
        while true {
            let n = try withUnsafeMutableBytes(of: &byte) { buffer in
                Result { () throws(Errno) in try read(into: buffer) }
            }.get()
            if n == 0 { return line.isEmpty ? nil : line }
            if byte == UInt8(ascii: "\n") { return line }
            if line.count == limit { throw Errno.fileTooLarge }
            line.append(byte)
        }
    }
}
