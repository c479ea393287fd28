import VaultCrypto
import VaultSystem

/// The write side of a vault, handed out only inside `VaultStore.withWriteLock`; do not keep it past
/// the closure, whose end releases the lock. It says what happens to items; how (spares, temp files,
/// generation records, move notes, fsyncs) is the store's.
package struct WriteTransaction {
    let store: VaultStore
    /// Whether durable item writes may go through the groups' spare files (see `WriteLock`).
    let reusesSpares: Bool
    /// The groups whose locks this transaction holds (nil: all of them).
    let lockedGroups: Set<GroupName>?

    /// Refuses a change to `group` when its lock is not held (a caller's mistake, never a user's).
    func requireLocked(_ group: GroupName) throws(StoreError) {
        guard let lockedGroups, !lockedGroups.contains(group) else { return }
        throw StoreError(
            .io, "group \(group) of the vault at \(store.path) was changed without its write lock; nothing was written")
    }

    /// Encrypts `plaintext` under the key of `protectionClass` and durably stores it as `item`,
    /// replacing any previous value; `locked` when the store lacks that class key. With `version`, the
    /// item's generation record is kept (from generation 2 on), so that a later read can tell when the
    /// file was replaced with an older copy of itself; it shares the item's directory fsync.
    package func write(
        _ plaintext: [UInt8], to item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion? = nil
    ) throws(StoreError) {
        try write(plaintext, to: item, protectionClass: protectionClass, version: version, keepingHistory: true)
    }

    /// `write`; `keepingHistory: false` replaces a file that is not this item's previous version (a move
    /// onto the name of an item that moves away in the same transaction) without keeping it.
    func write(
        _ plaintext: [UInt8], to item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion?,
        keepingHistory: Bool
    ) throws(StoreError) {
        try requireLocked(item.group)
        let directory = try store.existingGroupDirectory(item.group)
        let sealed = try store.seal(plaintext, as: item, protectionClass: protectionClass, version: version)
        store.removeStaleTemporaryFiles(group: item.group, directory: directory)
        // A fleet group's replica first: a write another machine made since the refresh is a conflict.
        let replica = try store.replica(for: item.group)
        if let replica {
            try store.requireUnchangedReplica(item.group)
            // The cache is current now: its file is the version this write replaces.
            var history: ReplicaHistoryStep?
            if keepingHistory, let version, version.generation > 1 {
                history = ReplicaHistoryStep(
                    writing: version.generation, versionsKept: store.versionsKept,
                    previous: try store.cachedItemFile(item))
            }
            try store.noticingConflicts { () throws(StoreError) in
                try replica.write(
                    item.id, contents: sealed.contents, history: history,
                    cache: ReplicaCache(store: store, group: item.group))
            }
        }
        let durable = !store.housekeeping.withLock { $0.bulkLoading }
        // Generation 1 gets no record: no older copy of the item exists to roll back to, and an add then
        // allocates no second inode. A record left there (by a delete whose unlink of it failed, or the
        // `moving` mark of an unfinished move) is removed instead, in the same directory fsync.
        let record = version.map { _ in (name: GenerationRecord.name(item.id), text: sealed.recordText) }
        // After a failed write through a spare, none is used until the next writer has removed them.
        // In a shared group each writing user has a spare of its own (`SpareFile`).
        let spare = durable && reusesSpares && !store.transactionState.withLock { $0.spareUntrusted }
        // A fleet group's history is the replica's (above).
        let history =
            replica == nil && keepingHistory
            ? version.flatMap { ItemHistory.Step(item.id, writing: $0.generation, kept: store.versionsKept) } : nil
        do {
            let pruned = try ItemWrite(
                contents: sealed.contents, name: item.id.fileName, record: record, durable: durable,
                reusingSpare: spare,
                permissions: sealed.keys.isShared ? .ownerAndGroupReadWrite : .ownerReadWrite, history: history
            )
            .run(in: directory, directoryPath: store.groupPath(item.group))
            if !pruned { store.noteLeftBehind(item.group) }
        } catch {
            if spare { store.transactionState.withLock { $0.spareUntrusted = true } }
            guard let replica else { throw error }
            throw store.localHalfFailed(error, group: item.group, replica)
        }
        // Counted as group commit's exchanges are, so that each writer of the group sees the others'
        // writes (`othersWriteToo`); flushed already, it needs no ticket's flush.
        if durable, replica == nil, let lockFile = try? store.currentGroupLockFile(item.group) {
            _ = store.takeCommitTicket(item.group, lockFile: lockFile)
        }
    }

    /// Moves an item to `destination` (another primary key or group) with the new contents `plaintext`,
    /// by the move protocol (`Moves`): the source is marked and an intent note written, then the new
    /// item, then the source and its record are removed (the source kept as its last version when its
    /// `sourceGeneration` is given), then the note. A crash at any point leaves
    /// the item at one of the two places for every reader, and the next writer finishes or undoes the
    /// move. `keepingSource`: another write of this transaction put an item at the source (two items
    /// swapping keys), so it is left in place.
    package func move(
        _ source: ItemLocation, to destination: ItemLocation, plaintext: [UInt8], protectionClass: ProtectionClass,
        version: ItemVersion, sourceGeneration: UInt64? = nil, keepingSource: Bool = false
    ) throws(StoreError) {
        try requireLocked(source.group)
        try requireLocked(destination.group)
        // A move is two replica transactions when a fleet group is on either side: not atomic across
        // machines, so not done.
        if store.isFleetGroup(source.group) || store.isFleetGroup(destination.group) {
            throw StoreError(
                .invalidName,
                "moving an item into, out of or within a fleet group (\(source.group) to \(destination.group)) is not "
                    + "supported yet: add the item under its new name or group, then remove the old one; nothing was "
                    + "changed")
        }
        try store.beginMove(MoveIntent(source: source, destination: destination))
        // A file at the destination is another item's, moving away in this transaction: its history is
        // not this one's.
        let occupied =
            (try? store.existingGroupDirectory(destination.group).statusAt(destination.id.fileName)) != nil
        try write(
            plaintext, to: destination, protectionClass: protectionClass, version: version, keepingHistory: !occupied)
        if !keepingSource { _ = try delete(source, deletedAt: sourceGeneration.map { $0 + 1 }) }
        try store.endMove(of: source)
    }

    /// Durably removes `item` and its generation record, without reading it (so also a damaged file);
    /// false when it did not exist. Its kept versions stay (`ItemHistory`): the record then keeps the
    /// number its deletion took (`deletedAt`, else one past its newest version), so that an item made
    /// again under the name carries on the numbering.
    @discardableResult
    package func delete(_ item: ItemLocation, deletedAt: UInt64? = nil) throws(StoreError) -> Bool {
        try requireLocked(item.group)
        guard let directory = try store.groupDirectory(item.group, create: false) else { return false }
        if store.versionsKept > 0, !store.isFleetGroup(item.group) {
            return try deleteKeepingHistory(item, deletedAt: deletedAt, in: directory)
        }
        let replica = try store.replica(for: item.group)
        if let replica {
            try store.requireUnchangedReplica(item.group)
            try store.noticingConflicts { () throws(StoreError) in
                try replica.delete(item.id, history: nil, cache: ReplicaCache(store: store, group: item.group))
            }
        }
        do throws(StoreError) {
            return try AtomicFile.remove(
                item.id.fileName, in: directory, directoryPath: store.groupPath(item.group),
                alsoRemove: GenerationRecord.name(item.id))
        } catch {
            guard let replica else { throw error }
            throw store.localHalfFailed(error, group: item.group, replica)
        }
    }

    /// Reads `item` under the lock, as `VaultStore.readFile` does: no move is half done under the lock
    /// (those of writers that died were finished when it was taken).
    package func read<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> Record? {
        try store.readFile(item, decoding: decode)
    }
}
