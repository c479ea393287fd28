import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// What the write lock's mark and tidy stamp (`WriterMark`) let a writer skip, and what they make it
/// clean up: a group left tidy in this boot is not listed at a store's first write; a writer that died,
/// a boot that ended, or a transaction that failed leaves the next store's first write to sweep.
@Suite(.enabled(if: BootIdentifier.current != nil, "needs /proc's boot id")) struct WriterMarkTests {
    let group = try! GroupName("marks")
    let stray = ".tmp.deadbeefdeadbeef"
    /// Stores that read versions finish interrupted moves, which a tidy stamp vouches for (any version
    /// will do: these tests make no move that recovery would complete).
    let versions: ItemVersionReader = { _ in ItemVersion(persistentID: [7], generation: 1) }

    func temporaryFiles(_ vault: TemporaryVault) throws -> [String] {
        try vault.entries("groups/\(group)").filter { $0.hasPrefix(AtomicFile.temporaryPrefix) }
    }

    /// Writes `bytes` at `offset` of `group`'s `.lock` (this suite's group by default), in place (the
    /// file is never replaced).
    func patchLock(_ vault: TemporaryVault, _ bytes: [UInt8], at offset: Int64, of group: GroupName? = nil) throws {
        let path = vault.file("groups/\(group ?? self.group)/.lock")
        let lock = try FileDescriptor.currentWorkingDirectory.openAt(path, [.readWrite])
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

    @Test func aStampUnderAHigherBoundOnVersionsIsNoStamp() throws {
        // A handle opened before the bound was lowered prunes to the old one: this store sweeps.
        let higherBound = try strayAfterFirstWrite { vault, store, _ in
            try patchLock(vault, [UInt8(store.versionsKept + 1)], at: WriterMark.tidyBoundOffset)
        }
        #expect(higherBound.isEmpty)
    }

    /// An item whose record lags its version files (a writer died between them) cannot be pruned yet:
    /// the sweep says so, and the group is not stamped tidy, so that a later process sweeps it again.
    @Test func anItemLeftWithMoreVersionsThanItsRecordAccountsForKeepsTheGroupUntidy() throws {
        let id = try ItemID(hashBytes: [UInt8](repeating: 7, count: ItemID.hashByteCount))
        let names = [id.fileName] + (1...7).map { ItemHistory.name(id, generation: UInt64($0)) }
        let lagging = ItemHistory.excess(among: names, kept: 5, exactly: false) { _ in nil }
        #expect(lagging.names.isEmpty && lagging.unresolved)
        let recorded = ItemHistory.excess(among: names, kept: 5, exactly: false) { _ in 8 }
        #expect(recorded.names == [ItemHistory.name(id, generation: 1), ItemHistory.name(id, generation: 2)])
        #expect(!recorded.unresolved)
        // A deleted item keeps its bound and its tombstone: tidy.
        let deleted = ItemHistory.excess(among: Array(names.dropFirst(2)), kept: 5, exactly: false) { _ in 7 }
        #expect(deleted.names.isEmpty && !deleted.unresolved)
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

    /// A writer that cannot set the mark fails, naming the `.lock`, and leaves what it found there: a
    /// dead writer's 1 (whether byte 0 or the stamp's withdrawal failed) is still the next writer's to
    /// act on, in the group whose mark failed and in every group locked after it.
    @Test(arguments: [1, 2]) func aWriterThatCannotSetTheMarkDoesNotWriteAndLeavesTheMark(_ failing: Int) throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, versions: versions)
            let later = try GroupName("zmarks")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            try store.put([1], group: later, id: try store.itemID(group: later, primaryKey: [1]))
            // Both left by writers that died.
            try patchLock(vault, [1], at: 0)
            try patchLock(vault, [1], at: 0, of: later)
            try vault.write([1, 2, 3], to: "groups/\(group)/\(stray)")
            let plan = FaultPlan(.write, occurrence: failing, effect: .fail(.ioError))
            let error = try #require(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) {
                    try store.withWriteLock(groups: [group, later]) { (_) throws(StoreError) in }
                }
            }
            #expect(error.message.contains("set the writer mark in \(vault.file("groups/\(group)/.lock"))"))
            #expect(error.errno == .ioError)
            #expect(try vault.bytes("groups/\(group)/.lock").first == WriterMark.active.rawValue)
            #expect(try vault.bytes("groups/\(later)/.lock").first == WriterMark.active.rawValue)
            #expect(try store.get(group: group, id: id) == [1])
            // The next writer cleans up after the death it still sees.
            let fresh = try VaultStore.open(at: vault.path, versions: versions)
            try fresh.put([2], group: group, id: id)
            #expect(try temporaryFiles(vault).isEmpty)
            #expect(try vault.bytes("groups/\(group)/.lock").first == WriterMark.idle.rawValue)
        }
    }
}
