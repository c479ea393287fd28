import Foundation
import Testing
import VaultTestSupport

@testable import VaultSystem

/// Names assembled in place name what the same text as a `String` names; what cannot be a name (a NUL
/// inside, more than fits) is refused before the kernel sees a shorter one.
@Suite struct EntryNameTests {
    /// The link's target as `withSymbolicLinkAt` hands it, or nil when there is none to hand.
    static func target(_ name: EntryName, in directory: FileDescriptor) throws(Errno) -> String? {
        try directory.withSymbolicLinkAt(name) { bytes in
            guard let bytes else { return nil }
            return String(decoding: (0..<bytes.count).map { bytes[$0] }, as: UTF8.self)
        }
    }

    @Test func aNameFromPartsReadsTheLinkItsTextNames() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            try fd.makeSymbolicLinkAt(".gen.abc", target: "1:0000000000000002:tag")
            var name = EntryName()
            name.append(".gen.")
            name.append("abc.item", droppingLast: 5)
            #expect(try Self.target(name, in: fd) == "1:0000000000000002:tag")
            #expect(try fd.readSymbolicLinkAt(name) == "1:0000000000000002:tag")
            #expect(try fd.readSymbolicLinkAt(".gen.abc") == "1:0000000000000002:tag")
            #expect(!name.isRefused)

            var missing = EntryName()
            missing.append(".gen.abd")
            #expect(throws: Errno.noSuchFileOrDirectory) { _ = try Self.target(missing, in: fd) }
        }
    }

    @Test func aNulInsideIsRefusedNotCut() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            // The name up to the NUL exists: a cut name would read this link.
            try fd.makeSymbolicLinkAt("ab", target: "wrong")
            var name = EntryName()
            name.append("ab\0cd")
            #expect(name.isRefused)
            #expect(throws: Errno.invalidArgument) { _ = try Self.target(name, in: fd) }
            #expect(throws: Errno.invalidArgument) { _ = try fd.readSymbolicLinkAt(name) }
            var trailing = EntryName()
            trailing.append("ab")
            trailing.append("\0")
            #expect(throws: Errno.invalidArgument) { _ = try Self.target(trailing, in: fd) }
        }
    }

    @Test func aSlashInsideIsRefusedNotWalked() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            try FileManager.default.createDirectory(atPath: dir.path + "/sub", withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: dir.path + "/sub/link", withDestinationPath: "wrong")
            var name = EntryName()
            name.append("sub/link")
            #expect(name.isRefused)
            #expect(throws: Errno.invalidArgument) { _ = try Self.target(name, in: fd) }
        }
    }

    @Test func aNameLongerThanFitsIsRefused() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let longest = String(repeating: "a", count: EntryName.capacity)
            try fd.makeSymbolicLinkAt(longest, target: "longest")
            var fits = EntryName()
            fits.append(String(longest.dropLast(3)))
            fits.append("aaa")
            #expect(try Self.target(fits, in: fd) == "longest")

            var tooLong = EntryName()
            tooLong.append(longest)
            tooLong.append("a")
            #expect(tooLong.isRefused)
            #expect(throws: Errno.nameTooLong) { _ = try Self.target(tooLong, in: fd) }
            #expect(throws: Errno.nameTooLong) { _ = try fd.readSymbolicLinkAt(tooLong) }
            // Refused for good: a later part that would fit does not make it a name.
            var refused = EntryName()
            refused.append(longest + "a")
            refused.append("")
            #expect(throws: Errno.nameTooLong) { _ = try Self.target(refused, in: fd) }
            // Dropping more than a text has adds nothing; dropping a negative count drops nothing.
            var empty = EntryName()
            empty.append("abc", droppingLast: 5)
            empty.append(longest)
            #expect(try Self.target(empty, in: fd) == "longest")
            var whole = EntryName()
            whole.append(String(longest.dropLast(3)), droppingLast: -4)
            whole.append("aaa")
            #expect(try Self.target(whole, in: fd) == "longest")
        }
    }
}
