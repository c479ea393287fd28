import VaultSystem

/// An item write made ready outside the write lock, for group commit (`GroupCommit`): the item's next
/// file sealed under the group's current key, written into the spare of a slot this writer holds and
/// flushed, and its generation record made beside it. The transaction that takes the lock checks that
/// the item is still the one the write was made from and publishes it (`WriteTransaction.commit`);
/// `VaultStore.finish` then makes it durable and lets the slot go. Used by one thread at a time.
package final class PreparedItemWrite {
    /// The item it writes.
    package let item: ItemLocation
    let store: VaultStore
    let slot: Int
    /// The group's directory and `.lock` as the store held them (never closed while it is open).
    let directory: FileDescriptor
    let lockFile: FileDescriptor
    let shared: Bool
    /// The key generation and binding the file was sealed for.
    let keyGeneration: UInt32
    let binding: [UInt8]
    /// Whether `.slot.<k>.gen` holds the item's next generation record (from generation 2 on).
    let hasRecord: Bool
    /// The generation it writes (nil: written without a version), for the item's history.
    let generation: UInt64?
    var stage = Stage.prepared

    enum Stage {
        case prepared
        /// Published: `ticket` is its place in the group's exchange counter (nil: it flushes alone);
        /// `recordFailure`, the record's error, reported once the write is flushed.
        case exchanged(ticket: CommitTicket?, recordFailure: StoreError?)
        case finished
    }

    init(
        item: ItemLocation, store: VaultStore, slot: Int, directory: FileDescriptor, lockFile: FileDescriptor,
        keys: GroupKeys, hasRecord: Bool, generation: UInt64?
    ) {
        self.generation = generation
        self.item = item
        self.store = store
        self.slot = slot
        self.directory = directory
        self.lockFile = lockFile
        self.shared = keys.isShared
        self.keyGeneration = keys.currentGeneration
        self.binding = keys.binding
        self.hasRecord = hasRecord
    }

    deinit {
        // A caller that never finished (it threw on the way): the slot must not stay claimed.
        try? store.finish(self)
    }

    var spareName: String { GroupCommit.spareName(slot) }
    var recordName: String { GroupCommit.recordName(slot) }
}

extension VaultStore {
    /// Prepares `plaintext` as the next file of `item` (with `version` as `WriteTransaction.write`
    /// takes it) without the write lock: sealed, written into the spare of a slot of this writer's and
    /// flushed, with its generation record beside it. Nil when no prepared write can be made (a fleet
    /// group, a group without a directory or key yet, a bulk load, no free slot, no boot id, or
    /// a failure on the way): the caller then writes in its transaction as usual, which reports what is
    /// wrong. A prepared write must be ended with `finish`, whatever happens to it.
    package func prepareWrite(
        _ plaintext: [UInt8], to item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion
    ) -> PreparedItemWrite? {
        guard BootIdentifier.current != nil, !housekeeping.withLock({ $0.bulkLoading }),
            let directory = try? groupDirectory(item.group, create: false),
            let sealed = try? seal(plaintext, as: item, protectionClass: protectionClass, version: version),
            !sealed.keys.isAbsent, !sealed.keys.isFleet,
            let lockFile = try? currentGroupLockFile(item.group)
        else { return nil }
        guard let slot = claimCommitSlot(item.group, lockFile: lockFile, directory: directory) else { return nil }
        let prepared = PreparedItemWrite(
            item: item, store: self, slot: slot, directory: directory, lockFile: lockFile, keys: sealed.keys,
            hasRecord: sealed.recordText != nil, generation: version.generation)
        guard let spare = SpareFile.open(prepared.spareName, in: directory, shared: sealed.keys.isShared),
            (try? spare.write(
                sealed.contents, for: item.id.fileName, in: directory, directoryPath: groupPath(item.group)))
                != nil
        else { return nil }  // `deinit` lets the slot go
        if let recordText = sealed.recordText {
            do {
                try directory.makeSymbolicLinkAt(prepared.recordName, target: recordText)
            } catch {
                // Left by a record failure of the slot's last write: made again.
                guard error == .fileExists, (try? directory.unlinkAt(prepared.recordName)) != nil,
                    (try? directory.makeSymbolicLinkAt(prepared.recordName, target: recordText)) != nil
                else { return nil }
            }
        }
        return prepared
    }

    /// Ends `prepared` after its transaction, whether that published it or not. A published write is
    /// made durable (by this writer's directory fsync or another's that started after the exchange),
    /// then the replaced file in the spare is zeroed and the slot let go; an unpublished one's spare is
    /// zeroed and its record removed. Throws when a published write may not be durable (the fsync
    /// failed) or its generation record could not be written: the new value is in place, as after
    /// those failures of an ordinary write. Does nothing the second time.
    package func finish(_ prepared: PreparedItemWrite) throws(StoreError) {
        let group = prepared.item.group
        switch prepared.stage {
        case .finished:
            return
        case .prepared:
            prepared.stage = .finished
            SpareFile.scrub(prepared.spareName, in: prepared.directory, shared: prepared.shared)
            if prepared.hasRecord { try? prepared.directory.unlinkAt(prepared.recordName) }
            releaseCommitSlot(prepared.slot, of: group, lockFile: prepared.lockFile, idle: true)
        case .exchanged(let ticket, let recordFailure):
            prepared.stage = .finished
            do {
                try flushCommitted(group, ticket: ticket, lockFile: prepared.lockFile, directory: prepared.directory)
            } catch {
                // The exchange may not be durable, so the spare may still be the item's file on disk: it
                // must not be written in place. Removing it is safe either way (journal order).
                let removed =
                    (try? AtomicFile.removeIfPresent(
                        prepared.spareName, in: prepared.directory, directoryPath: groupPath(group))) != nil
                releaseCommitSlot(prepared.slot, of: group, lockFile: prepared.lockFile, idle: removed)
                throw error
            }
            SpareFile.scrub(prepared.spareName, in: prepared.directory, shared: prepared.shared)
            releaseCommitSlot(prepared.slot, of: group, lockFile: prepared.lockFile, idle: true)
            if let recordFailure { throw recordFailure }
        }
    }
}

extension WriteTransaction {
    /// Publishes `prepared` in this transaction, as `write` would have written it: its spare exchanged
    /// with the item's file and its record put in place, the data already flushed and the directory
    /// fsync left to `VaultStore.finish`, which shares it with other writers. The caller must have
    /// checked under this lock that the item is still the one the write was made from. False, changing
    /// nothing, when the write no longer fits the group (removed and made again, rotated, its `.lock`
    /// opened anew after a fork, or the write made by another store): the caller then writes as usual.
    package func commit(_ prepared: PreparedItemWrite) throws(StoreError) -> Bool {
        let item = prepared.item
        try requireLocked(item.group)
        guard case .prepared = prepared.stage, prepared.store === store,
            let directory = try? store.groupDirectory(item.group, create: false), directory == prepared.directory,
            let lockFile = try? store.currentGroupLockFile(item.group), lockFile == prepared.lockFile,
            let keys = try? store.keys(for: item.group), keys.currentGeneration == prepared.keyGeneration,
            keys.binding == prepared.binding
        else { return false }
        let directoryPath = store.groupPath(item.group)
        let history = prepared.generation.flatMap {
            ItemHistory.Step(item.id, writing: $0, kept: store.versionsKept)
        }
        let kept = try history?.keepPrevious(of: item.id.fileName, in: directory, directoryPath: directoryPath) ?? false
        try SpareFile.exchange(prepared.spareName, with: item.id.fileName, in: directory, directoryPath: directoryPath)
        // The slot's spare is then zeroed by `finish`, once the exchange is durable.
        if history?.dropPruned(afterKeeping: kept, spareName: prepared.spareName, in: directory) == false {
            store.noteLeftBehind(item.group)
        }
        var recordFailure: StoreError?
        let record = GenerationRecord.name(item.id)
        if prepared.hasRecord {
            do {
                try directory.renameAt(prepared.recordName, to: record)
            } catch {
                recordFailure = StoreError.system(
                    error, .rename, "rename a prepared link onto", path: directoryPath / record)
            }
        } else {
            do throws(StoreError) {
                try AtomicFile.removeIfPresent(record, in: directory, directoryPath: directoryPath)
            } catch {
                recordFailure = error
            }
        }
        prepared.stage = .exchanged(
            ticket: store.takeCommitTicket(item.group, lockFile: lockFile), recordFailure: recordFailure)
        return true
    }
}
