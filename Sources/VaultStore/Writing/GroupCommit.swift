import Synchronization
import VaultSystem

/// Group commit in a group (docs/FORMAT.md, "Group commit"): writers of one group write and
/// flush their item file before they take the write lock (`PreparedItemWrite`), each into a spare of
/// its own; under the lock they only check that the item is still the one they read, exchange the
/// names and write the record; after it they share the directory fsync, one writer flushing for every
/// exchange made before its fsync started. So the two flushes of a write no longer run one writer at
/// a time: the data flushes of all writers overlap, and one directory flush serves several writes.
///
/// The group's `.lock` holds, besides the write lock and its mark (byte 0, `WriterMark`):
/// - byte 1: the flush lock, held by the one writer that fsyncs the directory for the others;
/// - bytes 16..<32: slot k's lock, held by the writer whose spare `.slot.<k>` and record
///   `.slot.<k>.gen` are in use;
/// - bytes 32..<48: slot k's mark: 1 from the claim until its holder's exchange is durable and the
///   spare zeroed, so that a claimer that finds 1 (its holder died) removes the slot's files instead of
///   writing over a file that may still be an item's on disk; 0 otherwise;
/// - bytes 48..<96: the exchange counter (`CommitCounter`): the last ticket, taken by each exchange
///   under the write lock;
/// - bytes 96..<144: the flush counter, likewise: the last ticket that a finished directory fsync
///   covered, written under the flush lock.
///
/// The counters are never synced and carry the boot they were written in: see `CommitCounter`.
enum GroupCommit {
    static let flushLockByte: Int64 = 1
    static let slotCount = 16
    static let slotLockBase: Int64 = 16
    static let slotMarkBase: Int64 = 32
    static let exchangeCounterOffset: Int64 = 48
    static let flushCounterOffset: Int64 = 96

    /// Slot marks.
    static let idle: UInt8 = 0
    static let active: UInt8 = 1

    /// Slot `slot`'s spare: an item's next file while it is prepared, the item's previous file after the
    /// exchange, zeros once that is durable.
    static func spareName(_ slot: Int) -> String { ".slot.\(slot)" }

    /// Slot `slot`'s generation record, made with the prepared file and renamed onto the item's record
    /// by the exchange's transaction.
    static func recordName(_ slot: Int) -> String { ".slot.\(slot).gen" }

    /// The in-process half of the flush lock: threads of one store share its `.lock` descriptor, and
    /// OFD locks taken through one descriptor do not exclude each other.
    final class FlushLeader: Sendable {
        let mutex = Mutex(())
    }

    /// Slot `slot`'s mark (a missing byte, in a `.lock` that never held one, is idle); nil when it
    /// cannot be read.
    static func mark(of slot: Int, in lockFile: FileDescriptor) -> UInt8? {
        guard let bytes = try? lockFile.read(count: 1, at: slotMarkBase + Int64(slot)) else { return nil }
        return bytes.first ?? idle
    }

    @discardableResult
    static func setMark(_ mark: UInt8, of slot: Int, in lockFile: FileDescriptor) -> Bool {
        (try? lockFile.write([mark], at: slotMarkBase + Int64(slot))) == 1
    }
}

extension VaultStore {
    /// Whether other writers (of any process, or other handles) write to `group` as well: another
    /// writer's write came between two of this store's within its last `sharedWriteMemory` writes
    /// there, as the group's exchange counter told under the lock. Writers that share a group gain by
    /// preparing their writes (`prepareWrite`); a lone writer writes under the lock at less cost (no read
    /// before it, no slot, no shared flush). False until this store has written to the group twice.
    package func othersWriteToo(_ group: GroupName) -> Bool {
        groupCommit.withLock { $0.preparedWritesLeft[group, default: 0] > 0 }
    }

    /// How many of its own writes a store keeps preparing after it last saw another writer's.
    static let sharedWriteMemory = 16

    /// Claims a free slot of `group` for a prepared write (its lock byte, and this process's record
    /// of it), starting at one that depends on the process so that writers spread; cleans up after a
    /// holder that died; sets the mark. Nil when every slot is taken or the lock file fails.
    func claimCommitSlot(_ group: GroupName, lockFile: FileDescriptor, directory: FileDescriptor) -> Int? {
        // Slots exclude each other only through one `.lock`: not one that was removed (and made again by
        // the owner) while this store kept it open.
        guard let held = try? lockFile.status(), let named = try? directory.statusAt(VaultStore.lockFileName),
            held.device == named.device, held.inode == named.inode
        else { return nil }
        let first = Int(UInt32(bitPattern: ProcessIdentity.processID) % UInt32(GroupCommit.slotCount))
        for step in 0..<GroupCommit.slotCount {
            let slot = (first + step) % GroupCommit.slotCount
            guard groupCommit.withLock({ $0.claimedSlots[group, default: []].insert(slot).inserted }) else { continue }
            guard (try? lockFile.tryLock(.exclusive, byte: GroupCommit.slotLockBase + Int64(slot))) == true else {
                groupCommit.withLock { _ = $0.claimedSlots[group]?.remove(slot) }
                continue
            }
            // A mark that is not clearly idle: the last holder died between its claim and its release,
            // so the spare may be an item's file whose exchange is not durable. Its files go first.
            let ready =
                GroupCommit.mark(of: slot, in: lockFile) == GroupCommit.idle
                || [GroupCommit.spareName(slot), GroupCommit.recordName(slot)].allSatisfy {
                    (try? AtomicFile.removeIfPresent($0, in: directory, directoryPath: groupPath(group))) != nil
                }
            if ready, GroupCommit.setMark(GroupCommit.active, of: slot, in: lockFile) { return slot }
            releaseCommitSlot(slot, of: group, lockFile: lockFile, idle: false)
            return nil
        }
        return nil
    }

    /// Lets slot `slot` go; `idle`: its spare is surely no item's file on disk (else the mark stays,
    /// and the next holder removes the slot's files).
    func releaseCommitSlot(_ slot: Int, of group: GroupName, lockFile: FileDescriptor, idle: Bool) {
        if idle { GroupCommit.setMark(GroupCommit.idle, of: slot, in: lockFile) }
        try? lockFile.unlock(byte: GroupCommit.slotLockBase + Int64(slot))
        groupCommit.withLock { _ = $0.claimedSlots[group]?.remove(slot) }
    }

    /// Takes the next ticket of `group`'s exchange counter; under the group's write lock. A counter of
    /// another boot, torn or damaged starts a new epoch. Nil when the counter cannot be kept (it cannot
    /// be read or written, no boot id): the writer then flushes alone.
    func takeCommitTicket(_ group: GroupName, lockFile: FileDescriptor) -> CommitTicket? {
        var ticket: CommitTicket?
        switch CommitCounter.read(lockFile, at: GroupCommit.exchangeCounterOffset) {
        case .unreadable: ticket = nil
        case .absent: ticket = CommitCounter.firstTicket()
        case .ticket(let last): ticket = last.successor
        }
        if let next = ticket, !CommitCounter.write(next, to: lockFile, at: GroupCommit.exchangeCounterOffset) {
            ticket = nil
        }
        groupCommit.withLock { state in
            let last = state.lastTicket[group]
            if let ticket, let last, ticket != last.successor {
                state.preparedWritesLeft[group] = Self.sharedWriteMemory
            } else if let remaining = state.preparedWritesLeft[group] {
                state.preparedWritesLeft[group] = remaining > 1 ? remaining - 1 : nil
            }
            state.lastTicket[group] = ticket
        }
        return ticket
    }

    /// Makes the exchanges of `group` up to `ticket` durable: done when the flush counter shows that a
    /// directory fsync that started after the exchange has finished; otherwise this writer takes the
    /// flush lock (after this process's other flushers of the group) and, unless the writer before it
    /// covered the ticket meanwhile, fsyncs the directory for every exchange made so far. Without a
    /// ticket, fsyncs alone.
    func flushCommitted(
        _ group: GroupName, ticket: CommitTicket?, lockFile: FileDescriptor, directory: FileDescriptor
    ) throws(StoreError) {
        let path = groupPath(group)
        guard let ticket else { return try AtomicFile.syncDirectory(directory, path: path) }
        func flushed() -> Bool {
            guard case .ticket(let flushed) = CommitCounter.read(lockFile, at: GroupCommit.flushCounterOffset) else {
                return false
            }
            return flushed.covers(ticket)
        }
        // Covered already by a flush that has finished: nothing to wait for.
        if flushed() { return }
        try flushLeader(group).mutex.withLock { (_) throws(StoreError) in
            do {
                try lockFile.lock(.exclusive, byte: GroupCommit.flushLockByte)
            } catch {
                // No flush lock to share: this writer's own fsync covers its exchange.
                return try AtomicFile.syncDirectory(directory, path: path)
            }
            defer { try? lockFile.unlock(byte: GroupCommit.flushLockByte) }
            if flushed() { return }
            // The exchanges made so far are covered too. Read without the write lock: a record in the
            // file was written after its exchange, and a torn one does not pass its check.
            var covered = ticket
            if case .ticket(let exchanged) = CommitCounter.read(lockFile, at: GroupCommit.exchangeCounterOffset),
                exchanged.covers(ticket)
            {
                covered = exchanged
            }
            try AtomicFile.syncDirectory(directory, path: path)
            CommitCounter.write(covered, to: lockFile, at: GroupCommit.flushCounterOffset)
        }
    }

    /// `group`'s flush leader (made on first use).
    private func flushLeader(_ group: GroupName) -> GroupCommit.FlushLeader {
        groupCommit.withLock { state in
            if let leader = state.flushLeaders[group] { return leader }
            let leader = GroupCommit.FlushLeader()
            state.flushLeaders[group] = leader
            return leader
        }
    }
}

/// Each group's `.lock` as this store has it open, and group commit's state in the group.
struct GroupCommitState {
    /// Each group's open `.lock` and the process that opened it (see `VaultStore.lock`).
    var groupLocks: [GroupName: (file: FileDescriptor, processID: Int32)] = [:]
    /// The slots this process holds in each group (threads sharing one `.lock` descriptor do not
    /// exclude each other by its locks).
    var claimedSlots: [GroupName: Set<Int>] = [:]
    /// The ticket of this store's last write to each group (prepared or under the lock), and how many
    /// more of its writes there it prepares since it last saw another writer's (`othersWriteToo`).
    var lastTicket: [GroupName: CommitTicket] = [:]
    var preparedWritesLeft: [GroupName: Int] = [:]
    /// Each group's in-process half of the flush lock.
    var flushLeaders: [GroupName: GroupCommit.FlushLeader] = [:]
}
