import Foundation
import Synchronization
import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// Durable item writes go through the group's spare file (`SpareFile.name`): written in place,
/// then exchanged with the item, so an update allocates and frees no file.
@Suite struct SpareFileTests {
    let group = try! GroupName("spares")

    func groupPath(_ vault: TemporaryVault) -> String { vault.file("groups/\(group)") }

    func status(_ vault: TemporaryVault, _ name: String) throws -> FileStatus {
        try FileDescriptor.currentWorkingDirectory.statusAt(groupPath(vault) + "/" + name)
    }

    /// The group directory's entries but its key and lock (`group.key`, `.lock`).
    func itemFiles(_ vault: TemporaryVault) throws -> [String] {
        try vault.entries("groups/\(group)").filter { $0 != "group.key" && $0 != ".lock" }
    }

    /// The writer mark: byte 0 of the group's `.lock`.
    func lockMark(_ vault: TemporaryVault) throws -> UInt8 {
        try vault.bytes("groups/\(group)/.lock").first ?? 0
    }

    /// A new store whose group holds item a, written as "a1" then "a2" (so the group has a spare), and
    /// item b, written as "b1" between them.
    func withStoreWithASpare<R>(_ body: (TemporaryVault, VaultStore, ItemID, ItemID) throws -> R) throws -> R {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let a = try store.itemID(group: group, primaryKey: [1])
            let b = try store.itemID(group: group, primaryKey: [2])
            try store.put(Array("a1".utf8), group: group, id: a)
            try store.put(Array("b1".utf8), group: group, id: b)
            try store.put(Array("a2".utf8), group: group, id: a)
            return try body(vault, store, a, b)
        }
    }

    @Test func updatesAlternateBetweenTheItemFileAndTheSpare() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("first".utf8), group: group, id: id)
            try store.put(Array("second".utf8), group: group, id: id)
            let files = Set([try status(vault, id.fileName).inode, try status(vault, SpareFile.name).inode])
            #expect(files.count == 2)
            // Same size, shorter and longer contents than the spare had.
            for value in ["third!", "4th", "the fifth value, longer than any before", "6"] {
                try store.put(Array(value.utf8), group: group, id: id)
                #expect(try store.get(group: group, id: id) == Array(value.utf8))
                let now = Set([try status(vault, id.fileName).inode, try status(vault, SpareFile.name).inode])
                #expect(now == files, "\(value): a new file was made")
                #expect(try status(vault, SpareFile.name).linkCount == 1)
                // The replaced ciphertext does not stay readable in the spare.
                #expect(try vault.bytes("groups/\(group)/\(SpareFile.name)").allSatisfy { $0 == 0 })
            }
            #expect(try itemFiles(vault) == [SpareFile.name, id.fileName])
            #expect(try VaultStore.open(at: vault.path).get(group: group, id: id) == Array("6".utf8))
            #expect(try lockMark(vault) == 0)
        }
    }

    @Test func anAddTakesTheSpareAsItsFile() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let a = try store.itemID(group: group, primaryKey: [1])
            let b = try store.itemID(group: group, primaryKey: [2])
            try store.put([1], group: group, id: a)
            try store.put([2], group: group, id: a)
            let spare = try status(vault, SpareFile.name).inode
            try store.put([3], group: group, id: b)
            #expect(try status(vault, b.fileName).inode == spare)
            #expect(!FileManager.default.fileExists(atPath: groupPath(vault) + "/" + SpareFile.name))
            #expect(try store.get(group: group, id: a) == [2])
            #expect(try store.get(group: group, id: b) == [3])
        }
    }

    enum Hostile: String, CaseIterable {
        case symlinkToAFileOutside, fifo, hardLinkToAnotherItem, directory, readableByOthers
    }

    /// Whatever sits at the spare's name, the write succeeds and nothing is written through it.
    @Test(arguments: Hostile.allCases)
    func aSpareThatIsNotAPlainFileOfItsOwnIsNeverWrittenThrough(_ hostile: Hostile) throws {
        try withStoreWithASpare { (vault, store, a, b) in
            let spare = groupPath(vault) + "/" + SpareFile.name
            try FileManager.default.removeItem(atPath: spare)
            let outside = vault.root + "/outside"
            try Data("outside".utf8).write(to: URL(fileURLWithPath: outside))
            switch hostile {
            case .symlinkToAFileOutside:
                try FileManager.default.createSymbolicLink(atPath: spare, withDestinationPath: outside)
            case .fifo:
                #expect(mkfifo(spare, 0o600) == 0)
            case .hardLinkToAnotherItem:
                try FileManager.default.linkItem(atPath: groupPath(vault) + "/" + b.fileName, toPath: spare)
            case .directory:
                try FileManager.default.createDirectory(atPath: spare + "/inside", withIntermediateDirectories: true)
            case .readableByOthers:
                // After an exchange its mode would be the item's.
                #expect(FileManager.default.createFile(atPath: spare, contents: Data(count: 100)))
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: spare)
            }
            try store.put(Array("a3".utf8), group: group, id: a)
            try store.put(Array("a4".utf8), group: group, id: a)
            #expect(try store.get(group: group, id: a) == Array("a4".utf8))
            #expect(try store.get(group: group, id: b) == Array("b1".utf8))
            #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == Data("outside".utf8))
            #expect(try vault.entries("groups/\(group)").filter { $0.hasPrefix(".tmp") }.isEmpty)
            #expect(try status(vault, a.fileName).permissions == .ownerReadWrite)
            #expect(try status(vault, b.fileName).permissions == .ownerReadWrite)
        }
    }

    /// A reader takes no lock: the file it opened can become the spare and be rewritten with another
    /// item's contents before it reads. It reads again by name and gets the current value.
    @Test func aReaderWhoseFileBecameTheSpareReadsAgainByName() throws {
        try withStoreWithASpare { (vault, _, a, b) in
            let reader = try VaultStore.open(at: vault.path)
            #expect(try reader.get(group: group, id: b) == Array("b1".utf8))  // the group directory is open
            let writer = try VaultStore.open(at: vault.path)
            let group = self.group
            // Between the reader's open of a's file and its read: a is updated (its file becomes the
            // spare), then b is updated (b's contents are written over that file, which becomes b's).
            let plan = FaultPlan(
                .read, occurrence: 1,
                effect: .interleave {
                    try! writer.put(Array("a3".utf8), group: group, id: a)
                    try! writer.put(Array("b2".utf8), group: group, id: b)
                })
            let value = try FaultInjection.withPlan(plan) { try reader.get(group: group, id: a) }
            #expect(value == Array("a3".utf8))
            #expect(plan.count(of: .open) > 1)
            #expect(try reader.get(group: group, id: b) == Array("b2".utf8))
        }
    }

    /// Two updates of the same item, each landing between a read's open and its read: both reads get
    /// the zeroed spare, the same bytes twice. The second read sees its file change under it, so that
    /// is no verdict; the third read gets the value.
    @Test func twoReadsOfZeroedSparesInARowAreNoVerdict() throws {
        try withStoreWithASpare { (vault, _, a, _) in
            let reader = try VaultStore.open(at: vault.path)
            #expect(try reader.get(group: group, id: a) == Array("a2".utf8))
            let writer = try VaultStore.open(at: vault.path)
            let group = self.group
            // The reader reads each file once (it ends at the size fstat gave); an update runs before the
            // read of each of the first two attempts. The writer's own reads go through the same plan and
            // are skipped.
            let state = Mutex((calls: 0, busy: false))
            let plan = FaultPlan(
                .read, occurrence: 1,
                effect: .interleave {
                    let call: Int? = state.withLock { state in
                        guard !state.busy else { return nil }
                        state.calls += 1
                        state.busy = true
                        return state.calls
                    }
                    guard let call else { return }
                    defer { state.withLock { $0.busy = false } }
                    if call == 1 { try! writer.put(Array("a3".utf8), group: group, id: a) }
                    if call == 2 { try! writer.put(Array("a4".utf8), group: group, id: a) }
                },
                persistent: true)
            let value = try FaultInjection.withPlan(plan) { try reader.get(group: group, id: a) }
            #expect(value == Array("a4".utf8))
            #expect(state.withLock { $0.calls } >= 3)
        }
    }

    /// A damaged file stays damaged: the second read returns the same bytes and the failure stands.
    @Test func aDamagedFileIsReportedAfterASecondIdenticalRead() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let a = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("a1".utf8), group: group, id: a)
            #expect(try store.get(group: group, id: a) == Array("a1".utf8))
            let name = "groups/\(group)/\(a.fileName)"
            var bytes = try vault.bytes(name)
            bytes[bytes.count - 1] ^= 1
            try vault.write(bytes, to: name)
            let plan = FaultPlan.counting()
            let error = #expect(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) { try store.get(group: group, id: a) }
            }
            #expect(error?.code == .integrity)
            #expect(plan.count(of: .open) == 2)
        }
    }

    /// A writer that died may have exchanged without the directory fsync: its spare may still be the
    /// item's file on disk. The next writer removes it instead of writing over it.
    @Test func afterAWriterDiedTheSpareIsReplacedNotWrittenOver() throws {
        try withStoreWithASpare { (vault, store, a, _) in
            let before = try vault.bytes("groups/\(group)/\(SpareFile.name)")
            let spare = try FileDescriptor.currentWorkingDirectory.openAt(
                groupPath(vault) + "/" + SpareFile.name, .readOnly)
            defer { try? spare.close() }
            try vault.write([1], to: "groups/\(group)/.lock")  // the mark of a writer that held the lock and died
            try VaultStore.open(at: vault.path).put(Array("a3".utf8), group: group, id: a)
            #expect(try spare.status().linkCount == 0)
            var after = [UInt8](repeating: 0, count: before.count + 1)
            let count = try after.withUnsafeMutableBytes { try spare.read(into: $0, at: 0) }
            #expect(Array(after[0..<count]) == before)
            #expect(try store.get(group: group, id: a) == Array("a3".utf8))
            #expect(try lockMark(vault) == 0)
        }
    }

    /// A mark that cannot be read counts as a death: the spare is removed, not written over.
    @Test func anUnreadableMarkIsTakenAsADeath() throws {
        try withStoreWithASpare { (vault, store, a, _) in
            let spare = try FileDescriptor.currentWorkingDirectory.openAt(
                groupPath(vault) + "/" + SpareFile.name, .readOnly)
            defer { try? spare.close() }
            let plan = FaultPlan(.read, occurrence: 1, effect: .fail(.ioError))
            try FaultInjection.withPlan(plan) { try store.put(Array("a3".utf8), group: group, id: a) }
            #expect(plan.injectedCount == 1)
            #expect(try spare.status().linkCount == 0)
            #expect(try store.get(group: group, id: a) == Array("a3".utf8))
        }
    }

    /// When the spares cannot be removed after a death, none is used, and the mark asks the next
    /// writer to try again.
    @Test func sparesThatCannotBeRemovedAreNotUsed() throws {
        try withStoreWithASpare { (vault, store, a, _) in
            let spare = try status(vault, SpareFile.name)
            try vault.write([1], to: "groups/\(group)/.lock")
            let plan = FaultPlan(.unlink, occurrence: 1, effect: .fail(.ioError), persistent: true)
            try FaultInjection.withPlan(plan) { try store.put(Array("a3".utf8), group: group, id: a) }
            #expect(plan.injectedCount >= 1)
            #expect(try store.get(group: group, id: a) == Array("a3".utf8))
            // Not written through: still the same file, still zeros, and the mark says so.
            #expect(try status(vault, SpareFile.name).inode == spare.inode)
            #expect(try status(vault, a.fileName).inode != spare.inode)
            #expect(try vault.bytes("groups/\(group)/\(SpareFile.name)").allSatisfy { $0 == 0 })
            #expect(try lockMark(vault) == WriterMark.sparesUntrusted.rawValue)
            try store.put(Array("a4".utf8), group: group, id: a)
            #expect(try lockMark(vault) == WriterMark.idle.rawValue)
            #expect(try store.get(group: group, id: a) == Array("a4".utf8))
        }
    }

    /// A failed write through the spare leaves the lock's mark set, so that the next writer (of any
    /// process) removes the spares first; the old value stays.
    /// The calls: the spare's contents (write #3; #1 is the mark, #2 the tidy stamp's withdrawal), its
    /// fdatasync (fsync #1), its close (close #1), the exchange and the rename tried after it (rename,
    /// every call). (Item plaintext is padded, so a short value never truncates the spare.)
    @Test(arguments: [
        (SystemOperation.write, 3, false, "a3"), (.fsync, 1, false, "a3"), (.close, 1, false, "a3"),
        (.rename, 1, true, "a3"),
    ])
    func aFailedSpareWriteLeavesTheMarkForTheNextWriter(
        _ op: SystemOperation, _ occurrence: Int, _ persistent: Bool, _ value: String
    ) throws {
        try withStoreWithASpare { (vault, store, a, _) in
            let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError), persistent: persistent)
            let error = #expect(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) { try store.put(Array(value.utf8), group: group, id: a) }
            }
            #expect(error?.errno == .ioError)
            #expect(try store.get(group: group, id: a) == Array("a2".utf8))
            #expect(try lockMark(vault) == WriterMark.sparesUntrusted.rawValue)
            try store.put(Array("a4".utf8), group: group, id: a)
            #expect(try store.get(group: group, id: a) == Array("a4".utf8))
            #expect(try lockMark(vault) == 0)
        }
    }

    /// A failure after the exchange (the record's symlink or rename, the directory fsync) is reported,
    /// the new value is in place but may not be durable, and the spare is removed: the exchange may not
    /// be on disk, so that file may still be the item's there. The mark asks the next writer to check.
    @Test(arguments: [(SystemOperation.symlink, 1), (.rename, 2), (.fsync, 2)])
    func aFailureAfterTheExchangeRemovesTheSpare(_ op: SystemOperation, _ occurrence: Int) throws {
        try withStoreWithASpare { (vault, store, a, _) throws in
            let version = ItemVersion(persistentID: [7], generation: 3)
            let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
            let error = #expect(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) {
                    try store.withWriteLock { (tx) throws(StoreError) in
                        try tx.write(
                            Array("a3".utf8), to: ItemLocation(group: group, id: a), protectionClass: .always,
                            version: version)
                    }
                }
            }
            #expect(error?.errno == .ioError)
            #expect(try store.get(group: group, id: a) == Array("a3".utf8))
            #expect(!FileManager.default.fileExists(atPath: groupPath(vault) + "/" + SpareFile.name))
            #expect(try lockMark(vault) == WriterMark.sparesUntrusted.rawValue)
        }
    }

    /// Generation 1 writes no record, and removes one left behind (here by a delete that keeps the item's
    /// versions, whose record says the number the deletion took), so that an item written at generation
    /// 1 is not taken for a rollback.
    @Test func generationOneRemovesARecordLeftBehind() throws {
        try withStoreWithASpare { (vault, store, a, _) in
            let record = groupPath(vault) + "/" + GenerationRecord.name(a)
            func write(_ value: String, generation: UInt64) throws {
                try store.withWriteLock { (tx) throws(StoreError) in
                    try tx.write(
                        Array(value.utf8), to: ItemLocation(group: group, id: a), protectionClass: .always,
                        version: ItemVersion(persistentID: [7], generation: generation))
                }
            }
            try write("a3", generation: 3)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: record)) != nil)
            _ = try store.withWriteLock { (tx) throws(StoreError) in
                try tx.delete(ItemLocation(group: group, id: a))
            }
            #expect(try store.get(group: group, id: a) == nil)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: record)) != nil)
            try write("restored", generation: 1)
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: record)) == nil)
            // Read and checked against its (absent) record at generation 1: no rollback.
            let read = try store.readFile(ItemLocation(group: group, id: a)) { (_, _) throws(StoreError) in
                DecodedVersion(version: ItemVersion(persistentID: [7], generation: 1))
            }
            #expect(read?.version.generation == 1)
        }
    }

    /// On a file system without RENAME_EXCHANGE, or under a seccomp filter that refuses renameat2, the
    /// spare is renamed onto the item instead.
    @Test(arguments: [Errno.invalidArgument, .notSupported, .notPermitted, .notImplemented])
    func withoutExchangeTheSpareIsRenamedOntoTheItem(_ errno: Errno) throws {
        try withStoreWithASpare { (vault, store, a, b) in
            let plan = FaultPlan(.rename, occurrence: 1, effect: .fail(errno))
            try FaultInjection.withPlan(plan) { try store.put(Array("a3".utf8), group: group, id: a) }
            #expect(plan.injectedCount == 1)
            #expect(try store.get(group: group, id: a) == Array("a3".utf8))
            #expect(try itemFiles(vault) == [a.fileName, b.fileName].sorted())
        }
    }

    /// A shared group's writers each write through a spare of their own, `.spare.<uid>` (0660, of the
    /// group's Unix group, as an item there must be); a file under that name that is anything else is
    /// removed, not written through; after a death every user's spare goes.
    @Test func aSharedGroupsWriterUsesASpareOfItsOwn() throws {
        guard ProcessIdentity.effectiveUserID == 0 else { return }
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            try store.createGroup(group, unixGroup: 65534)
            let id = try store.itemID(group: group, primaryKey: [1])
            let spareName = SpareFile.name(shared: true)
            #expect(spareName == ".spare.0")
            try store.put(Array("first".utf8), group: group, id: id)
            try store.put(Array("second".utf8), group: group, id: id)
            let files = Set([try status(vault, id.fileName).inode, try status(vault, spareName).inode])
            for value in ["third", "the fourth, longer"] {
                try store.put(Array(value.utf8), group: group, id: id)
                #expect(Set([try status(vault, id.fileName).inode, try status(vault, spareName).inode]) == files)
                for name in [id.fileName, spareName] {
                    #expect(try status(vault, name).permissions == .ownerAndGroupReadWrite)
                    #expect(try status(vault, name).groupID == 65534)
                }
                #expect(try vault.bytes("groups/\(group)/\(spareName)").allSatisfy { $0 == 0 })
            }
            // Root's file, but not what an item of the group must be (another Unix group, another mode), or
            // another user's file: removed.
            let spare = groupPath(vault) + "/" + spareName
            for (owner, groupID, mode) in [(0, 0, 0o660), (0, 65534, 0o600), (65534, 65534, 0o660)]
                as [(UInt32, UInt32, mode_t)]
            {
                try FileManager.default.removeItem(atPath: spare)
                #expect(FileManager.default.createFile(atPath: spare, contents: Data(count: 300)))
                #expect(chown(spare, owner, groupID) == 0 && chmod(spare, mode) == 0)
                let planted = try FileDescriptor.currentWorkingDirectory.openAt(spare, .readOnly)
                defer { try? planted.close() }
                try store.put(Array("after a plant".utf8), group: group, id: id)
                #expect(try planted.status().linkCount == 0)
                #expect(try planted.readAll(limit: 1000) == [UInt8](repeating: 0, count: 300))
                #expect(try status(vault, id.fileName).permissions == .ownerAndGroupReadWrite)
                #expect(try status(vault, id.fileName).groupID == 65534)
                #expect(try store.get(group: group, id: id) == Array("after a plant".utf8))
            }
            // Another member's spare, and a death: the next writer removes every user's spare.
            #expect(
                FileManager.default.createFile(atPath: groupPath(vault) + "/.spare.65534", contents: Data(count: 1)))
            try vault.write([1], to: "groups/\(group)/.lock")
            try VaultStore.open(at: vault.path).put(Array("after a death".utf8), group: group, id: id)
            #expect(try vault.entries("groups/\(group)").filter { $0.hasPrefix(".spare") } == [spareName])
            #expect(try store.get(group: group, id: id) == Array("after a death".utf8))
        }
    }
}
