import Foundation
import Synchronization
import Testing
import VaultSystem
import VaultTestSupport

@testable import Vault
@testable import VaultStore

/// Group commit (`PreparedItemWrite`, `GroupCommit`): a `set` in a group writes and flushes
/// the item's next file before the write lock, publishes it under the lock only if the item is still the
/// one it read, and shares the directory fsync with other writers afterwards.
@Suite struct GroupCommitTests {
    static let app = "com.example.app"

    func newVault(_ t: TemporaryVault) throws -> Vault {
        try Vault.create(at: t.path, client: try Client(applicationIdentifier: Self.app))
    }

    func key(_ account: String) throws -> ItemKey { try ItemKey(service: "gc", account: account) }

    /// The group directory's file names starting with `.slot.`.
    func slotFiles(_ t: TemporaryVault) throws -> [String] {
        try t.entries("groups/\(Self.app)").filter { $0.hasPrefix(".slot.") }
    }

    /// The ticket at `offset` of the group's `.lock` (`CommitCounter`); nil when there is none.
    func ticket(_ t: TemporaryVault, at offset: Int64) throws -> CommitTicket? {
        let file = try FileDescriptor.currentWorkingDirectory.openAt(
            t.file("groups/\(Self.app)/.lock"), [.readOnly])
        defer { try? file.close() }
        guard case .ticket(let ticket) = CommitCounter.read(file, at: offset) else { return nil }
        return ticket
    }

    /// The sequence numbers of the exchange and flush counters, when both are of one run.
    func counters(_ t: TemporaryVault) throws -> (exchanged: UInt64?, flushed: UInt64?) {
        let exchanged = try ticket(t, at: GroupCommit.exchangeCounterOffset)
        let flushed = try ticket(t, at: GroupCommit.flushCounterOffset)
        return (exchanged?.sequence, flushed?.epoch == exchanged?.epoch ? flushed?.sequence : nil)
    }

    func generation(_ vault: Vault, _ account: String) throws -> UInt64? {
        let group = try AccessGroup(Self.app)
        let id = try vault.engine.itemID(group, ItemRecord.primaryKey(.genericPassword, genp("gc", account)))
        return try vault.engine.load(group, id)?.generation
    }

    /// Makes `vault` and `other` see each other's writes in the group (each of them wrote between two
    /// of the other's), so that their sets go through group commit.
    func share(_ vault: Vault, _ other: Vault) throws {
        for round in 0..<2 {
            try vault.set(Data("v\(round)"), for: try key("shared-v"))
            try other.set(Data("o\(round)"), for: try key("shared-o"))
        }
        #expect(vault.engine.store.othersWriteToo(try GroupName(Self.app)))
        #expect(other.engine.store.othersWriteToo(try GroupName(Self.app)))
    }

    /// A writer alone in its group writes under the lock, as before group commit: no slot, no read
    /// before the lock; its writes are counted all the same.
    @Test func aLoneWriterWritesUnderTheLock() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            for value in ["one", "two", "three"] { try vault.set(Data(value), for: try key("a")) }
            #expect(try vault.string(for: try key("a")) == "three")
            #expect(try slotFiles(t).isEmpty)
            #expect(try counters(t).exchanged == 3)
            #expect(!vault.engine.store.othersWriteToo(try GroupName(Self.app)))
        }
    }

    @Test func aSetAmongOtherWritersGoesThroughASlotAndLeavesItZeroed() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            let other = try t.open(app: Self.app)
            try share(vault, other)
            #expect(try slotFiles(t).isEmpty)
            try vault.set(Data("one"), for: try key("a"))
            try vault.set(Data("two"), for: try key("a"))
            #expect(try vault.string(for: try key("a")) == "two")
            #expect(try generation(vault, "a") == 2)
            // The replaced file is the item's version 1 now, so the slot's spare (its other name) went;
            // the slot's record went onto the item's.
            #expect(try slotFiles(t).isEmpty)
            #expect(try t.entries("groups/\(Self.app)").contains { $0.hasPrefix(".gen.") })
            #expect(try vault.data(for: try key("a"), version: 1) == Data("one"))
            // Once the item has as many versions as the vault keeps, the one that falls off becomes the
            // slot's spare, zeroed once the exchange is durable.
            for value in 3...(vault.versionsKept + 3) { try vault.set(Data("v\(value)"), for: try key("a")) }
            let files = try slotFiles(t)
            #expect(files.count == 1 && !files[0].hasSuffix(".gen"), "\(files)")
            if files.count == 1 { #expect(try t.bytes("groups/\(Self.app)/\(files[0])").allSatisfy { $0 == 0 }) }
            // Every write took a ticket (four under the lock, the others prepared), and the last directory
            // fsync covered them all.
            let writes = 6 + vault.versionsKept + 1
            #expect(try counters(t).exchanged == UInt64(writes))
            #expect(try counters(t).flushed == UInt64(writes))
            // A fresh handle reads the value and its generation.
            let fresh = try t.open(app: Self.app)
            let last = "v\(vault.versionsKept + 3)"
            #expect(try fresh.string(for: try key("a")) == last)
            #expect(try generation(fresh, "a") == UInt64(vault.versionsKept + 3))
        }
    }

    @Test func formatOneHasNoSlots() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try t.open(app: Self.app)
            try vault.set(Data("one"), for: try key("a"))
            try vault.set(Data("two"), for: try key("a"))
            #expect(try slotFiles(t).isEmpty)
            #expect(try vault.string(for: try key("a")) == "two")
        }
    }

    /// Another writer updates the item after it was read and before the lock: the prepared write is
    /// not published (it would have been the same generation as the other's, over it); the set is made
    /// again under the lock, one generation later, and the slot is left clean.
    @Test func aWriteMadeStaleBeforeTheLockIsWrittenAgainUnderIt() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            let other = try t.open(app: Self.app)
            try share(vault, other)
            try vault.set(Data("first"), for: try key("a"))
            let group = try AccessGroup(Self.app)
            let prepared = try #require(
                vault.engine.prepareSet(Data("mine"), for: try key("a"), accessibility: .afterFirstUnlock, in: group))
            try other.set(Data("theirs"), for: try key("a"))
            let query = try key("a").query
            let published = try vault.withWriteLock(groups: [group]) { tx throws(VaultError) -> Bool in
                let current = try vault.engine.find(query, in: [group], underWriteLock: true).first
                guard prepared.wasMade(from: current) else { return false }
                return try translatingStoreErrors { () throws(StoreError) in try tx.commit(prepared.write) }
            }
            #expect(!published)
            try vault.engine.store.finish(prepared.write)
            #expect(try vault.string(for: try key("a")) == "theirs")
            #expect(try slotFiles(t).allSatisfy { !$0.hasSuffix(".gen") })
            for name in try slotFiles(t) { #expect(try t.bytes("groups/\(Self.app)/\(name)").allSatisfy { $0 == 0 }) }

            // The same race through `set` itself: the other writer's set runs just before this one's write
            // lock (its first lock call after the slot's); this one's is made again over it (generation 4
            // over the other's 3), not published at the other's generation.
            let race = FaultPlan(
                .lock, occurrence: 2,
                effect: .interleave({ try? other.set(Data("racing"), for: try! ItemKey(service: "gc", account: "a")) }))
            try FaultInjection.withPlan(race) { try vault.set(Data("last"), for: try key("a")) }
            #expect(try vault.string(for: try key("a")) == "last")
            #expect(try generation(vault, "a") == 4)
        }
    }

    /// A writer whose exchange is made but not yet flushed when another writer's flush starts is
    /// covered by that flush: it makes no directory fsync of its own.
    @Test func aLaterWritersFlushCoversAnEarlierExchange() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            let other = try t.open(app: Self.app)
            try share(vault, other)
            try vault.set(Data("a0"), for: try key("a"))
            try other.set(Data("b0"), for: try key("b"))
            // This writer's lock calls: the slot (1), the write lock and its release (2, 3), then the
            // flush lock (4). Just before it, the other writer makes a whole set, whose flush comes
            // after this writer's exchange.
            let plan = FaultPlan(
                .lock, occurrence: 4,
                effect: .interleave({ try? other.set(Data("b1"), for: try! ItemKey(service: "gc", account: "b")) }))
            try FaultInjection.withPlan(plan) { try vault.set(Data("a1"), for: try key("a")) }
            #expect(plan.count(of: .lock) >= 4)
            // Three flushes, not four: two data flushes, and the other writer's directory fsync.
            #expect(plan.count(of: .fsync) == 3)
            #expect(try vault.string(for: try key("a")) == "a1")
            #expect(try vault.string(for: try key("b")) == "b1")
            let (exchanged, flushed) = try counters(t)
            #expect(exchanged != nil && flushed == exchanged)
        }
    }

    /// A slot whose holder died (its lock let go, its mark left at 1) is cleaned before it is used
    /// again: its spare may be an item's file whose exchange never became durable, so it is removed,
    /// not written over.
    @Test func aSlotWhoseHolderDiedIsRemovedBeforeUse() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            try share(vault, try t.open(app: Self.app))
            try vault.set(Data("one"), for: try key("a"))
            let group = try AccessGroup(Self.app)
            let prepared = try #require(
                vault.engine.prepareSet(Data("two"), for: try key("a"), accessibility: .afterFirstUnlock, in: group))
            // As a death leaves it: the slot's lock gone, its mark still 1, its spare and record there.
            prepared.write.stage = .finished
            vault.engine.store.releaseCommitSlot(
                prepared.write.slot, of: group.name, lockFile: prepared.write.lockFile, idle: false)
            #expect(try slotFiles(t).contains(GroupCommit.recordName(prepared.write.slot)))
            // The next set of this process claims the same slot (its first choice): both files are unlinked
            // first, and only then a new spare made. A set through a clean slot unlinks nothing.
            // Each write also unlinks the slot's spare name once the replaced file is kept as a version
            // (until the item has as many versions as the vault keeps: then the pruned one is recycled).
            let cleaning = try systemCalls { try vault.set(Data("three"), for: try key("a")) }
            #expect(cleaning.calls[.unlink] == 2 + 1)
            let clean = try systemCalls { try vault.set(Data("four"), for: try key("a")) }
            #expect(clean.calls[.unlink, default: 0] == 1)
            #expect(try vault.string(for: try key("a")) == "four")
            #expect(try slotFiles(t).allSatisfy { !$0.hasSuffix(".gen") })
        }
    }

    /// The counters are never synced and are read by writers that may not hold the lock: an exchange
    /// counter that is torn, of another boot or at its last number starts a new epoch, and a flush
    /// counter of an old epoch covers none of its tickets, however high it is (a power cut can leave a
    /// newer flush counter than exchange counter on disk). The set still makes its directory fsync.
    @Test(arguments: ["torn", "another boot", "last number"])
    func aFlushCounterOfAnotherRunCoversNothing(exchangeCounter: String) throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            try share(vault, try t.open(app: Self.app))
            let lock = "groups/\(Self.app)/.lock"
            let store = vault.engine.store
            let lockFile = try store.currentGroupLockFile(try GroupName(Self.app))
            // A flush counter far ahead, in the epoch the exchange counter had.
            guard case .ticket(let exchanged) = CommitCounter.read(lockFile, at: GroupCommit.exchangeCounterOffset)
            else {
                Issue.record("no exchange counter")
                return
            }
            CommitCounter.write(
                CommitTicket(epoch: exchanged.epoch, sequence: 1_000), to: lockFile, at: GroupCommit.flushCounterOffset)
            var bytes = try t.bytes(lock)
            switch exchangeCounter {
            case "torn": bytes[48 + 44] ^= 0xff  // its check no longer matches
            case "another boot": bytes[48] ^= 0xff
            default:
                CommitCounter.write(
                    CommitTicket(epoch: exchanged.epoch, sequence: .max), to: lockFile,
                    at: GroupCommit.exchangeCounterOffset)
                bytes = try t.bytes(lock)
            }
            try t.write(bytes, to: lock)
            #expect(CommitCounter.read(lockFile, at: GroupCommit.exchangeCounterOffset) == .absent)
            let (_, calls) = try systemCalls { try vault.set(Data("new"), for: try key("a")) }
            #expect(calls[.fsync] == 2, "the data flush and the directory fsync")
            #expect(try vault.string(for: try key("a")) == "new")
            guard case .ticket(let restarted) = CommitCounter.read(lockFile, at: GroupCommit.exchangeCounterOffset)
            else {
                Issue.record("the exchange counter did not start again")
                return
            }
            #expect(restarted.epoch != exchanged.epoch && restarted.sequence == 1)
        }
    }

    /// A slot's files made by a writer preparing a set while the group is removed (after the remover
    /// listed the directory) do not leave the removal half done.
    @Test func aGroupIsRemovedWhileAWriterPreparesInIt() throws {
        try withTemporaryVault("group-commit") { t in
            let vault = try newVault(t)
            try vault.set(Data("one"), for: try key("a"))
            let slot = t.file("groups/\(Self.app)/.slot.9")
            let planting = FaultPlan(
                .unlink, occurrence: 1,
                effect: .interleave({ _ = FileManager.default.createFile(atPath: slot, contents: nil) }))
            let removed = try FaultInjection.withPlan(planting) {
                try vault.removeGroup(try AccessGroup(Self.app), force: true)
            }
            #expect(removed == 1)
            #expect(!FileManager.default.fileExists(atPath: t.file("groups/\(Self.app)")))
        }
    }

    /// A handle that removed a group and then made it again (its next add) finds the new group's items
    /// by a scan, by key and by reference: nothing it knew of the removed group stands for the new one.
    @Test func aGroupRemovedAndMadeAgainByOneHandleIsSeenWhole() throws {
        try withTemporaryVault("group-again") { t in
            let vault = try newVault(t)
            try vault.set(Data("one".utf8), for: try key("a"))
            #expect(try vault.copyMatching(Query(itemClass: .genericPassword, limit: .all)).count == 1)
            try vault.removeGroup(try AccessGroup(Self.app), force: true)
            try vault.set(Data("two".utf8), for: try key("b"))
            let all = try vault.copyMatching(
                Query(itemClass: .genericPassword, limit: .all), returning: [.attributes, .persistentReference])
            #expect(all.map(\.attributes.account) == ["b"])
            #expect(try vault.data(for: try key("b")) == Data("two".utf8))
            #expect(try vault.data(for: try key("a")) == nil)
            if let reference = all.first?.persistentReference {
                let byReference = try vault.copyMatching(
                    Query(itemClass: .genericPassword, persistentReference: reference), returning: [.data])
                #expect(byReference.first?.data == Data("two".utf8))
            }
        }
    }

    /// Two handles make their group at once (as two processes' first writes would): the one that found
    /// no key file, while the other made the group and wrote into it, writes into that group instead of
    /// calling its key lost. The other writer runs just before each of this one's first opens in turn,
    /// on a thread of its own; when it needs a lock that this one holds, it finishes afterwards.
    @Test func aGroupMadeByAnotherWriterMeanwhileIsNoLostKey() throws {
        for position in 1...10 {
            try withTemporaryVault("group-race") { t in
                _ = try newVault(t)
                let other = try t.open(app: Self.app)
                let this = try t.open(app: Self.app)
                let failures = Mutex<[String]>([])
                let otherDone = DispatchGroup()
                let plan = FaultPlan(
                    .open, occurrence: position,
                    effect: .interleave({
                        otherDone.enter()
                        Thread.detachNewThread {
                            defer { otherDone.leave() }
                            do {
                                try other.set(Data("other".utf8), for: try ItemKey(service: "gc", account: "other"))
                            } catch {
                                failures.withLock { $0.append("the other writer, before open \(position): \(error)") }
                            }
                        }
                        _ = otherDone.wait(timeout: .now() + 0.5)
                    }))
                do {
                    try FaultInjection.withPlan(plan) { try this.set(Data("this".utf8), for: try key("this")) }
                } catch {
                    failures.withLock { $0.append("this writer, the other before open \(position): \(error)") }
                }
                otherDone.wait()
                #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
                let reader = try t.open(app: Self.app)
                #expect(try reader.string(for: try key("this")) == "this", "the other before open \(position)")
                #expect(try reader.string(for: try key("other")) == "other", "the other before open \(position)")
            }
        }
    }

    /// Eight handles (as eight processes would) set their own items of one group at once: every item
    /// ends at its last value, every slot's spare is zeroed, no prepared record is left.
    @Test func concurrentSettersOfOneGroupLoseNothing() throws {
        try withTemporaryVault("group-commit") { t in
            _ = try newVault(t)
            let writers = 8
            let rounds = 25
            let handles = try (0..<writers).map { _ in try t.open(app: Self.app) }
            let failures = Mutex<[String]>([])
            // A thread each (not a pool of two on this machine's two cores): all eight write at once.
            let done = DispatchGroup()
            for w in 0..<writers {
                done.enter()
                let handle = handles[w]
                Thread.detachNewThread {
                    defer { done.leave() }
                    do {
                        for round in 0..<rounds {
                            try handle.set(Data("w\(w)-\(round)"), for: try ItemKey(service: "gc", account: "w\(w)"))
                        }
                    } catch {
                        failures.withLock { $0.append("writer \(w): \(error)") }
                    }
                }
            }
            done.wait()
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            let reader = try t.open(app: Self.app)
            for w in 0..<writers {
                #expect(try reader.string(for: try key("w\(w)")) == "w\(w)-\(rounds - 1)")
                #expect(try generation(reader, "w\(w)") == UInt64(rounds))
            }
            // Writers that saw each other's writes went through slots.
            #expect(!(try slotFiles(t).isEmpty))
            for name in try slotFiles(t) {
                #expect(!name.hasSuffix(".gen"))
                #expect(try t.bytes("groups/\(Self.app)/\(name)").allSatisfy { $0 == 0 })
            }
            #expect(try counters(t).exchanged == UInt64(writers * rounds))
        }
    }
}
