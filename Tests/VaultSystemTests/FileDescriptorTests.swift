import Foundation
import Testing
import VaultTestSupport

@testable import VaultSystem

@Suite struct FileDescriptorTests {
    @Test func writeAllReadAllRoundTrip() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let payload = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let out = try fd.openAt("file", [.writeOnly, .create, .exclusiveCreate])
            try out.writeAll(payload)
            try out.sync()
            try out.close()
            let input = try fd.openAt("file", .readOnly)
            let back = try input.readAll(limit: 1 << 20)
            try input.close()
            #expect(back == payload)
            // The wiping read (for secrets) reads the same bytes past its first buffer, within its limit.
            let again = try fd.openAt("file", .readOnly)
            #expect(try again.readAllWiping(limit: 1 << 20) == payload)
            try again.close()
            let short = try fd.openAt("file", .readOnly)
            #expect(throws: Errno.fileTooLarge) { try short.readAllWiping(limit: 99_999) }
            try short.close()
            #expect(try fd.statusAt("file").permissions == .ownerReadWrite)
            #expect(try fd.statusAt("file").kind == .regular)
            #expect(try fd.statusAt("file").size == 100_000)
        }
    }

    @Test func positionalWritesTruncateAndDataSync() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let out = try fd.openAt("file", [.writeOnly, .create])
            try out.writeAll(Array("0123456789".utf8))
            try Array("ab".utf8).withUnsafeBytes { try out.writeAll($0, at: 3) }
            try out.syncData()
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/file")) == Data("012ab56789".utf8))
            try out.truncate(to: 4)
            try out.close()
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/file")) == Data("012a".utf8))
            // Short positional writes are looped like short writes.
            let plan = FaultPlan(.write, occurrence: 1, effect: .shortWrite, persistent: true)
            let again = try fd.openAt("file", .writeOnly)
            let payload = [UInt8](repeating: 9, count: 1000)
            try FaultInjection.withPlan(plan) { try payload.withUnsafeBytes { try again.writeAll($0, at: 2) } }
            try again.close()
            #expect(plan.count(of: .write) > 3)
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/file")) == Data(Array("01".utf8) + payload))
        }
    }

    @Test func exchangeSwapsTwoNamesAndNeedsBoth() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            try Data("a".utf8).write(to: URL(fileURLWithPath: dir.path + "/a"))
            try Data("b".utf8).write(to: URL(fileURLWithPath: dir.path + "/b"))
            let inode = try fd.statusAt("a").inode
            try fd.exchangeAt("a", with: "b")
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/a")) == Data("b".utf8))
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path + "/b")) == Data("a".utf8))
            #expect(try fd.statusAt("b").inode == inode)
            #expect(throws: Errno.noSuchFileOrDirectory) { try fd.exchangeAt("a", with: "missing") }
        }
    }

    @Test func readAllRefusesFilesPastTheLimit() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let out = try fd.openAt("big", [.writeOnly, .create])
            try out.writeAll([UInt8](repeating: 7, count: 5000))
            try out.close()
            let input = try fd.openAt("big", .readOnly)
            defer { try? input.close() }
            #expect(throws: Errno.fileTooLarge) { _ = try input.readAll(limit: 4999) }
        }
    }

    @Test func shortWritesAreLooped() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let out = try fd.openAt("file", [.writeOnly, .create])
            let payload = [UInt8](repeating: 0xAB, count: 1000)
            let plan = FaultPlan(.write, occurrence: 1, effect: .shortWrite, persistent: true)
            try FaultInjection.withPlan(plan) { try out.writeAll(payload) }
            try out.close()
            // Every write was cut in half, so writeAll had to loop many times, and still wrote everything.
            #expect(plan.count(of: .write) > 5)
            let input = try fd.openAt("file", .readOnly)
            #expect(try input.readAll(limit: 4096) == payload)
            try input.close()
        }
    }

    @Test func faultSeamFailsTheKthCallOnceOrPersistently() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let out = try fd.openAt("file", [.writeOnly, .create])
            defer { try? out.close() }
            let once = FaultPlan(.fsync, occurrence: 2, effect: .fail(.ioError))
            try FaultInjection.withPlan(once) {
                try out.sync()
                #expect(throws: Errno.ioError) { try out.sync() }
                try out.sync()
            }
            #expect(once.injectedCount == 1)
            let always = FaultPlan(.write, occurrence: 1, effect: .fail(.noSpace), persistent: true)
            FaultInjection.withPlan(always) {
                #expect(throws: Errno.noSpace) { try out.writeAll([1]) }
                #expect(throws: Errno.noSpace) { try out.writeAll([1]) }
            }
            // Outside the plan nothing is injected.
            try out.writeAll([1])
        }
    }

    @Test func symlinksAreNeverFollowed() throws {
        try withTemporaryDirectory("system") { dir in
            try "x".write(toFile: dir.path + "/target", atomically: false, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: dir.path + "/realdir", withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: dir.path + "/link", withDestinationPath: "target")
            try FileManager.default.createSymbolicLink(atPath: dir.path + "/dirlink", withDestinationPath: "realdir")
            let fd = try dir.open()
            defer { try? fd.close() }
            #expect(throws: Errno.tooManySymbolicLinks) { _ = try fd.openAt("link", .readOnly) }
            #expect(throws: Errno.self) { _ = try fd.openDirectoryAt("dirlink") }
            #expect(try fd.statusAt("link").kind == .symbolicLink)
        }
    }

    @Test func linkAtIsExclusiveAndRenameReplaces() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            for name in ["a", "b"] {
                let f = try fd.openAt(name, [.writeOnly, .create])
                try f.writeAll(Array(name.utf8))
                try f.close()
            }
            #expect(throws: Errno.fileExists) { try fd.linkAt("a", to: "b") }
            try fd.linkAt("a", to: "c")
            try fd.renameAt("a", to: "b")
            #expect(Set(try fd.entryNames()) == ["b", "c"])
            let b = try fd.openAt("b", .readOnly)
            #expect(try b.readAll(limit: 10) == Array("a".utf8))
            try b.close()
            try fd.unlinkAt("b")
            #expect(throws: Errno.noSuchFileOrDirectory) { try fd.unlinkAt("b") }
            try fd.makeDirectoryAt("d")
            #expect(throws: Errno.fileExists) { try fd.makeDirectoryAt("d") }
            #expect(try fd.statusAt("d").permissions == .ownerAll)
            try fd.removeDirectoryAt("d")
        }
    }

    /// More names than one read of the directory returns (32 KiB of records), the longest name a file
    /// system takes, and names that are not ASCII; listing twice through one descriptor gives both.
    @Test func entryNamesListsLargeDirectoriesWhole() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            var expected: Set<String> = [String(repeating: "n", count: 255), "é-名前", "sub"]
            for i in 0..<3000 { expected.insert("item-\(i)-" + String(repeating: "x", count: i % 40)) }
            for name in expected where name != "sub" { try fd.openAt(name, [.writeOnly, .create]).close() }
            try fd.makeDirectoryAt("sub")
            let first = try fd.entryNames()
            #expect(first.count == expected.count)
            #expect(Set(first) == expected)
            #expect(Set(try fd.entryNames()) == expected)
            let empty = try fd.openDirectoryAt("sub")
            defer { try? empty.close() }
            #expect(try empty.entryNames().isEmpty)
        }
    }

    /// A directory removed while a descriptor of it is open lists as empty, as readdir has it.
    @Test func aRemovedDirectoryListsAsEmpty() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            try fd.makeDirectoryAt("gone")
            let gone = try fd.openDirectoryAt("gone")
            defer { try? gone.close() }
            try fd.removeDirectoryAt("gone")
            #expect(try gone.entryNames().isEmpty)
        }
    }

    @Test func errnoDescribesItself() {
        #expect(Errno.noSpace.description == "No space left on device")
        #expect(Errno.ioError.description.contains("Input/output"))
    }
}

@Suite struct FileLockTests {
    /// Runs `body` with two opens of one `.lock` in a temp directory, closed afterwards.
    func withTwoOpens(_ body: (FileDescriptor, FileDescriptor) throws -> Void) throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let first = try fd.openAt(".lock", [.readWrite, .create])
            let second = try fd.openAt(".lock", [.readWrite, .create])
            defer {
                try? first.close()
                try? second.close()
            }
            try body(first, second)
        }
    }

    /// OFD locks belong to the open file description: two opens of one file in one process exclude
    /// each other, unlike classic POSIX record locks.
    @Test func twoOpensInOneProcessExcludeEachOther() throws {
        try withTwoOpens { first, second in
            try first.lock(.exclusive)
            #expect(try second.tryLock(.exclusive) == false)
            #expect(try second.tryLock(.shared) == false)
            try first.unlock()
            #expect(try second.tryLock(.exclusive) == true)
            try second.unlock()
        }
    }

    /// Each byte is a lock of its own: the write lock (byte 0) and group commit's locks (other bytes)
    /// neither exclude nor release each other.
    @Test func locksOnDifferentBytesAreIndependent() throws {
        try withTwoOpens { first, second in
            try first.lock(.exclusive)
            try first.lock(.exclusive, byte: 17)
            #expect(try second.tryLock(.exclusive, byte: 1) == true)
            #expect(try second.tryLock(.exclusive, byte: 17) == false)
            try first.unlock()
            #expect(try second.tryLock(.exclusive) == true)
            #expect(try second.tryLock(.exclusive, byte: 17) == false)
            try first.unlock(byte: 17)
            #expect(try second.tryLock(.shared, byte: 17) == true)
        }
    }

    @Test func closingTheDescriptorReleasesTheLock() throws {
        try withTemporaryDirectory("system") { dir in
            let fd = try dir.open()
            defer { try? fd.close() }
            let first = try fd.openAt(".lock", [.readWrite, .create])
            let second = try fd.openAt(".lock", [.readWrite, .create])
            defer { try? second.close() }
            try first.lock(.exclusive)
            try first.close()
            #expect(try second.tryLock(.exclusive) == true)
        }
    }
}

@Suite struct ProcessIdentityTests {
    @Test func dumpableFlagCanBeTurnedOff() throws {
        // Checked in a child so that the test process itself stays debuggable.
        let pid = fork()
        if pid == 0 {
            do {
                try ProcessIdentity.disableDumps()
                _exit(ProcessIdentity.isDumpable ? 1 : 0)
            } catch {
                _exit(2)
            }
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        #expect((status >> 8) & 0xff == 0)
        // The parent's own flag is not checked: opening a vault (VaultStore) turns dumps off for the
        // whole process, and other suites in this test process open vaults in parallel.
    }
}
