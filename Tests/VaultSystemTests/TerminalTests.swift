import Glibc
import Testing

@testable import VaultSystem

/// A pseudo-terminal pair, closed by `close()`.
private struct PseudoTerminal {
    let primary: FileDescriptor
    let secondary: FileDescriptor

    init() throws {
        (primary, secondary) = try FileDescriptor.openPseudoTerminal()
    }

    var echoes: Bool { (try? secondary.isEchoEnabled()) ?? false }

    func close() {
        try? secondary.close()
        try? primary.close()
    }
}

/// A pipe, closed by `close()`. Each end is closed once: tests run in parallel, and closing a number
/// twice could close another test's descriptor.
private final class PipePair {
    let read: FileDescriptor
    let write: FileDescriptor
    private var writeClosed = false

    init() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        read = FileDescriptor(rawValue: fds[0])
        write = FileDescriptor(rawValue: fds[1])
    }

    func closeWrite() throws {
        writeClosed = true
        try write.close()
    }

    func close() {
        try? read.close()
        if !writeClosed { try? write.close() }
    }
}

private struct Failure: Error {}

// Serialized: echo control is process-wide state (one terminal at a time).
@Suite(.serialized) struct TerminalTests {
    @Test func aPseudoTerminalIsATerminalAndAPipeIsNot() throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let pipe = try PipePair()
        defer { pipe.close() }
        #expect(terminal.secondary.isTerminal)
        #expect(!pipe.read.isTerminal)
        #expect(!FileDescriptor(rawValue: -1).isTerminal)
    }

    @Test func echoIsOffInsideAndRestoredAfter() throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let fd = terminal.secondary
        #expect(terminal.echoes)
        let inside = try fd.withEchoDisabled { terminal.echoes }
        #expect(inside == false)
        #expect(terminal.echoes)
    }

    @Test func echoIsRestoredWhenTheBodyThrows() throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let fd = terminal.secondary
        #expect(throws: Failure.self) {
            try fd.withEchoDisabled { () throws(Failure) in throw Failure() }
        }
        #expect(terminal.echoes)
    }

    @Test func echoCannotBeDisabledOnAPipeOrTwice() throws {
        let pipe = try PipePair()
        defer { pipe.close() }
        #expect(throws: Errno(rawValue: ENOTTY)) { try pipe.read.withEchoDisabled {} }
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let fd = terminal.secondary
        _ = try fd.withEchoDisabled {
            #expect(throws: Errno(rawValue: EBUSY)) { try fd.withEchoDisabled {} }
        }
        #expect(terminal.echoes)
    }

    @Test func aLineTypedWithEchoOffIsReadAndNotEchoed() throws {
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        let line = try terminal.secondary.withEchoDisabled { () throws(Errno) -> [UInt8]? in
            try terminal.primary.writeAll(Array("hunter2\n".utf8))
            return try terminal.secondary.readLine(limit: 100)
        }
        #expect(line == Array("hunter2".utf8))
        // Whatever came back on the primary side (nothing, with echo off) must not hold the secret.
        try terminal.primary.writeAll(Array("x\n".utf8))
        _ = try terminal.secondary.readLine(limit: 100)
        var echoed: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = try buffer.withUnsafeMutableBytes { raw in try terminal.primary.read(into: raw) }
        echoed += buffer[0..<n]
        #expect(!String(decoding: echoed, as: UTF8.self).contains("hunter2"))
        #expect(String(decoding: echoed, as: UTF8.self).contains("x"))
    }

    @Test func echoStateOfAPipeIsNotATerminal() throws {
        let pipe = try PipePair()
        defer { pipe.close() }
        #expect(throws: Errno(rawValue: ENOTTY)) { _ = try pipe.read.isEchoEnabled() }
    }

    @Test func readLineStopsAtTheNewlineAndLeavesTheRest() throws {
        let pipe = try PipePair()
        defer { pipe.close() }
        try pipe.write.writeAll(Array("first\nsecond\n\nlast".utf8) + [0, 1])
        try pipe.closeWrite()
        #expect(try pipe.read.readLine(limit: 100) == Array("first".utf8))
        #expect(try pipe.read.readLine(limit: 100) == Array("second".utf8))
        #expect(try pipe.read.readLine(limit: 100) == [])
        #expect(try pipe.read.readLine(limit: 100) == Array("last".utf8) + [0, 1])
        #expect(try pipe.read.readLine(limit: 100) == nil)
    }

    @Test func readLineRefusesALineOverTheLimit() throws {
        let pipe = try PipePair()
        defer { pipe.close() }
        try pipe.write.writeAll(Array("abcdef\n".utf8))
        #expect(throws: Errno.fileTooLarge) { _ = try pipe.read.readLine(limit: 5) }
    }

    @Test func readAllReadsAPipeToTheEndBinarySafe() throws {
        let pipe = try PipePair()
        defer { pipe.close() }
        let payload: [UInt8] = [0, 0xff, 10, 0, 13, 10]
        try pipe.write.writeAll(payload)
        try pipe.closeWrite()
        #expect(try pipe.read.readAll(limit: 1 << 20) == payload)
    }
}
