import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// What the write lock's mark and tidy stamp (`WriterMark`) let a writer skip, and what they make it
/// clean up: a group left tidy in this boot is not listed at a store's first write; a writer that died,
/// a boot that ended, or a transaction that failed leaves the next store's first write to sweep.
@Suite struct WriterMarkTests {
    let group = try! GroupName("marks")
    let stray = ".tmp.deadbeefdeadbeef"
    /// Stores that read versions finish interrupted moves, which a tidy stamp vouches for (any version
    /// will do: these tests make no move that recovery would complete).
    let versions: ItemVersionReader = { _ in ItemVersion(persistentID: [7], generation: 1) }

    func temporaryFiles(_ vault: TemporaryVault) throws -> [String] {
        try vault.entries("groups/\(group)").filter { $0.hasPrefix(AtomicFile.temporaryPrefix) }
    }

    /// Writes `bytes` at `offset` of the group's `.lock`, in place (the file is never replaced).
    func patchLock(_ vault: TemporaryVault, _ bytes: [UInt8], at offset: Int64) throws {
        let lock = try FileDescriptor.currentWorkingDirectory.openAt(vault.file("groups/\(group)/.lock"), [.readWrite])
        defer { try? lock.close() }
        try lock.writeAll(bytes, at: offset)
    }

    func stamp(_ vault: TemporaryVault) throws -> [UInt8] {
        Array(try vault.bytes("groups/\(group)/.lock").dropFirst(Int(WriterMark.tidyBootOffset)).prefix(16))
    }

    /// A group written once, then `prepare`, a stray temp file, and a put through a newly opened store;
    /// returns the temp files left.
    func strayAfterFirstWrite(_ prepare: (TemporaryVault, VaultStore, ItemID) throws -> Void) throws -> [String] {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, versions: versions)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            try prepare(vault, store, id)
            try vault.write([1, 2, 3], to: "groups/\(group)/\(stray)")
            let fresh = try VaultStore.open(at: vault.path, versions: versions)
            try fresh.put([2], group: group, id: id)
            #expect(try fresh.get(group: group, id: id) == [2])
            #expect(try stamp(vault) == BootIdentifier.current, "a normal finish stamps the group tidy")
            return try temporaryFiles(vault)
        }
    }

    @Test func aGroupLeftTidyInThisBootIsNotListed() throws {
        try #require(BootIdentifier.current != nil)
        // Nothing a writer leaves can be there: the stray, which no writer made, is not looked for.
        let left = try strayAfterFirstWrite { _, _, _ in }
        #expect(left == [stray])
    }

    @Test func aWriterThatDiedIsCleanedUpAfter() throws {
        // A death leaves the mark at 1.
        let left = try strayAfterFirstWrite { vault, _, _ in try patchLock(vault, [1], at: 0) }
        #expect(left.isEmpty)
    }

    @Test func aStampOfAnotherBootIsNoStamp() throws {
        // A power cut: the temp file's name survived in the journal, the page with the mark did not.
        let otherBoot = try strayAfterFirstWrite { vault, _, _ in
            try patchLock(vault, [UInt8](repeating: 0xab, count: 16), at: WriterMark.tidyBootOffset)
        }
        #expect(otherBoot.isEmpty)
    }

    @Test func aFailedTransactionWithdrawsTheStamp() throws {
        let left = try strayAfterFirstWrite { vault, store, _ throws in
            #expect(try stamp(vault) == BootIdentifier.current)
            #expect(throws: StoreError.self) {
                try store.withWriteLock(groups: [group]) { (_) throws(StoreError) in
                    throw StoreError(.io, "the body failed")
                }
            }
            #expect(try vault.bytes("groups/\(group)/.lock").first == WriterMark.idle.rawValue)
            #expect(try stamp(vault) == [UInt8](repeating: 0, count: 16))
        }
        #expect(left.isEmpty)
    }

    @Test func aMoveLeftOpenIsNotStampedTidyAndTheNextProcessFinishesIt() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, versions: versions)
            let source = ItemLocation(group: group, id: try store.itemID(group: group, primaryKey: [1]))
            let destination = ItemLocation(group: group, id: try store.itemID(group: group, primaryKey: [2]))
            try store.put([1], group: group, id: source.id)
            // A body that began a move and returned without ending it (a caller that caught its failure).
            try store.withWriteLock(groups: [group]) { (_) throws(StoreError) in
                try store.beginMove(MoveIntent(source: source, destination: destination))
            }
            let notes = { try vault.entries("groups/\(group)").filter { $0.hasPrefix(MoveIntent.prefix) } }
            #expect(try notes().count == 1)
            #expect(try stamp(vault) == [UInt8](repeating: 0, count: 16))
            let fresh = try VaultStore.open(at: vault.path, versions: versions)
            try fresh.put([3], group: group, id: try fresh.itemID(group: group, primaryKey: [3]))
            #expect(try notes().isEmpty, "the next process's first write finished the move")
            #expect(try fresh.get(group: group, id: source.id) == [1])
            #expect(try stamp(vault) == BootIdentifier.current)
        }
    }

    @Test func aWriterThatCannotSetTheMarkDoesNotWrite() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, versions: versions)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            let plan = FaultPlan(.write, occurrence: 1, effect: .fail(.ioError))
            let error = try #require(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) { try store.put([2], group: group, id: id) }
            }
            #expect(error.message.contains("set the writer mark in \(vault.file("groups/\(group)/.lock"))"))
            #expect(error.errno == .ioError)
            #expect(try store.get(group: group, id: id) == [1])
        }
    }
}
