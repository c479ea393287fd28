import VaultSystem

/// The write lock: this process's writer mutex and exclusive OFD locks, and what a writer does when it
/// takes a lock from one that died holding it (`WriterMark`): sweep temp files, remove spares, finish
/// half-done moves.
///
/// Each group has a lock of its own (`groups/<group>/.lock`: members of a shared group cannot open a vault-wide one, and writers of
/// different groups need not wait for each other), taken in name order; whole-vault operations take
/// the vault's `.lock` and then every group's. Each lock's mark covers what its holders leave in the
/// directories it guards.
extension VaultStore {
    /// Runs `body` holding the vault's whole write lock (every group's), so that a
    /// check-then-act in `body` cannot interleave with any other writer, in this process or another.
    /// The lock is released when `body` returns or throws (or the process dies). Before `body`, the
    /// transaction cleans up after a writer that died (and, at the first write of this store to a group
    /// that its last writer did not leave tidy, after any writer since): temp files, spares and
    /// interrupted moves. Failures of the store come as `Failure(storeError)`.
    package func withWriteLock<R, Failure: StoreErrorConvertible>(
        _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        try withWriteLock(finishingMoves: true, groups: nil, body)
    }

    /// `withWriteLock` for a transaction that changes only `groups` and `creating`. Groups of `creating` that do not exist yet are made first (private to
    /// the owner); those of `groups` that do not exist are skipped (they hold nothing to change). A
    /// change in the transaction to a group whose lock it does not hold is refused.
    package func withWriteLock<R, Failure: StoreErrorConvertible>(
        groups: [GroupName], creating: [GroupName] = [], _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        try withWriteLock(finishingMoves: true, groups: groups, creating: creating, body)
    }

    /// `withWriteLock`; without `finishingMoves`, for the writes of key files (passphrase changes,
    /// rekeys), which touch no item and leave interrupted moves to the next item write.
    func withWriteLock<R, Failure: StoreErrorConvertible>(
        finishingMoves: Bool, groups: [GroupName]? = nil, creating: [GroupName] = [],
        _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        // A fleet group's write that another machine's beat (`conflict`) runs again on a fresh cache.
        var attempt = 0
        while true {
            do {
                return try lockedOnce(finishingMoves: finishingMoves, groups: groups, creating: creating, body)
            } catch {
                let thread = ProcessIdentity.threadID
                let conflicted = transactionState.withLock { $0.conflictedThreads.remove(thread) != nil }
                guard conflicted, attempt < Self.conflictRetries else { throw error }
                attempt += 1
                // Two machines that keep beating each other back off, a random while, longer each time.
                ProcessIdentity.sleep(microseconds: UInt32.random(in: 500...2_000) * UInt32(min(attempt, 8)))
            }
        }
    }

    static let conflictRetries = 64

    private func lockedOnce<R, Failure: StoreErrorConvertible>(
        finishingMoves: Bool, groups: [GroupName]?, creating: [GroupName],
        _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        try writerMutex.withLock { (_) throws(Failure) -> R in
            transactionState.withLock {
                $0.writerThread = ProcessIdentity.threadID
                $0.transactionGroups = nil
                $0.refreshedInTransaction = []
                $0.openMoves = [:]
                $0.leftBehind = []
                _ = $0.conflictedThreads.remove(ProcessIdentity.threadID)
            }
            defer { transactionState.withLock { $0.writerThread = nil } }
            let (locks, requested) = try Failure.converting { () throws(StoreError) in
                try acquireLocks(groups, creating: creating)
            }
            // The groups this transaction leaves with nothing to clean, stamped so at a normal finish.
            var leftTidy: Set<GroupName> = []
            // How many locks this writer marked: a lock it did not mark keeps what it found (1 or 2 there
            // is the next writer's to act on).
            var marked = 0
            defer {
                let untrusted = transactionState.withLock {
                    $0.holdsVaultLock = false
                    return $0.spareUntrusted
                }
                for (index, lock) in locks.enumerated().reversed() {
                    if index < marked {
                        if !untrusted, let group = lock.groups?.first, leftTidy.contains(group) {
                            WriterMark.stampTidy(lock.file, versionsKept: versionsKept)
                        }
                        (untrusted ? WriterMark.sparesUntrusted : .idle).write(to: lock.file)
                    }
                    try? lock.file.unlock()
                }
            }
            transactionState.withLock { $0.spareUntrusted = false }
            // A spare is written in place only when the exchange that made it the spare is durable. After
            // anything but a normal finish, remove the spares first; if that fails, use none and leave
            // the mark for the next writer. A writer that cannot set the mark does not write: its own
            // death would go unnoticed.
            var reusesSpares = true
            var recovered: Set<GroupName>? = []
            // Groups whose last writer left them tidy in this boot: no listing at this store's first write.
            var foundTidy: Set<GroupName> = []
            for lock in locks {
                let found = WriterMark.read(lock.file)
                if let group = lock.groups?.first,
                    WriterMark.leftTidy(lock.file, found: found, versionsKept: versionsKept)
                {
                    foundTidy.insert(group)
                }
                try Failure.converting { () throws(StoreError) in
                    do throws(Errno) {
                        try WriterMark.markActive(lock.file, withdrawingStamp: !lock.guardsVaultDirectory)
                    } catch {
                        throw StoreError.system(error, .write, "set the writer mark in", path: lockPath(lock))
                    }
                }
                marked += 1
                // An unreadable mark is taken as a death: the cleanup is what is always safe.
                let died = found == nil || found == .active
                if died {
                    // Its temp files may be in any group it guards, and this handle may have cleaned up
                    // long ago. Clean them all now: this writer may not write there (a delete), and the
                    // next writer will not know that anyone died.
                    forgetCleaned(lock)
                    removeStaleTemporaryFiles(in: lock.groups)
                    if lock.groups == nil { recovered = nil } else { recovered?.formUnion(lock.groups!) }
                }
                if found != .idle, !removeSpares(in: lock.groups) {
                    reusesSpares = false
                    transactionState.withLock { $0.spareUntrusted = true }
                }
            }
            if !foundTidy.isEmpty {
                housekeeping.withLock { state in
                    state.cleanedGroups.formUnion(foundTidy)
                    state.movesRecoveredGroups.formUnion(foundTidy)
                }
            }
            // Closures, not key paths: a key path through `Set<GroupName>` is made at run time, and its first
            // use scans every protocol conformance in the binary (a quarter of a CLI put's instructions).
            if locks.contains(where: { $0.guardsVaultDirectory }) { removeStaleTemporaryFilesInVaultDirectory() }
            let locked = requested.map { Set($0) }
            let transaction = WriteTransaction(store: self, reusesSpares: reusesSpares, lockedGroups: locked)
            // Fleet groups are refreshed on first touch (`refreshReplicaIfStale`): a transaction that does not
            // touch one (a rekey, a passphrase change, a local group's write) does not need its replica.
            transactionState.withLock { $0.transactionGroups = groups == nil ? nil : locked }
            // Known tidy: found so, or swept now (a group this store swept before may have been left
            // untidy since by another process's failed transaction).
            var knownTidy = foundTidy
            if finishingMoves {
                try Failure.converting { () throws(StoreError) in
                    let pending = firstWriteGroups(groups == nil ? nil : locked, died: recovered)
                    // The listing that finds their notes sweeps their temp files and versions too, even
                    // where this store did so before.
                    let sweeping = (pending ?? Set(requested ?? [])).subtracting(foundTidy)
                    housekeeping.withLock { $0.cleanedGroups.subtract(sweeping) }
                    if pending == nil || !(pending!.isEmpty) {
                        try finishInterruptedMoves(in: transaction, groups: pending)
                    }
                    // A store without a version reader finishes no move (`finishInterruptedMoves`).
                    if versions != nil { knownTidy.formUnion(pending ?? Set(requested ?? [])) }
                }
            }
            let result = try body(transaction)
            leftTidy = transactionState.withLock { knownTidy.subtracting($0.openMoves.keys).subtracting($0.leftBehind) }
            // Every write's local half is done: each replicated group the transaction touched has the cache
            // of what its replica last saw, which the replica may record (still under the group's lock).
            for group in transactionState.withLock({ $0.refreshedInTransaction }) {
                knownReplica(of: group)?.transactionEnded(ReplicaCache(store: self, group: group))
            }
            return result
        }
    }

    /// A lock held: its descriptor, the groups whose directories it guards (nil: every group), and
    /// whether it guards the vault directory's own files.
    struct HeldLock {
        let file: FileDescriptor
        let groups: Set<GroupName>?
        var guardsVaultDirectory: Bool { groups.map { $0.isEmpty } ?? true }
    }

    /// Where `lock`'s file is, for errors.
    private func lockPath(_ lock: HeldLock) -> FilePath {
        guard let group = lock.groups?.first else { return location / Self.lockFileName }
        return groupPath(group) / Self.lockFileName
    }

    /// Takes the locks a transaction over `requested` and `creating` needs, in order (making the groups
    /// of `creating` that are missing); returns them and the groups they cover (nil: every group). On
    /// failure none stays held.
    private func acquireLocks(_ requested: [GroupName]?, creating: [GroupName]) throws(StoreError)
        -> ([HeldLock], [GroupName]?)
    {
        var files: [(file: FileDescriptor, groups: Set<GroupName>?, path: FilePath)] = []
        var covered: [GroupName]? = nil
        var held: [HeldLock] = []
        if requested == nil {
            _ = try ownerClassKeys("write to every group at once")
            // The vault's lock before the groups are listed: a group is made only under it (see
            // `withGroupCreationLock`), so none can appear that this transaction would not lock.
            let vaultLock = try currentVaultLockFile()
            do throws(Errno) {
                try vaultLock.lock(.exclusive)
            } catch {
                throw StoreError.system(error, .lock, "lock", path: location / Self.lockFileName)
            }
            held.append(HeldLock(file: vaultLock, groups: []))
            transactionState.withLock { $0.holdsVaultLock = true }
        }
        let names: [GroupName]
        if let requested {
            var existing: Set<GroupName> = []
            for group in Set(creating) {
                _ = try existingGroupDirectory(group)
                existing.insert(group)
            }
            for group in Set(requested).subtracting(existing) where try groupDirectory(group, create: false) != nil {
                existing.insert(group)
            }
            names = existing.sorted()
        } else {
            names = try groups()
        }
        covered = names
        do throws(StoreError) {
            for group in names {
                files.append((try currentGroupLockFile(group), [group], groupPath(group) / Self.lockFileName))
            }
        } catch {
            for lock in held.reversed() { try? lock.file.unlock() }
            transactionState.withLock { $0.holdsVaultLock = false }
            throw error
        }
        for (file, groups, path) in files {
            do throws(Errno) {
                try file.lock(.exclusive)
            } catch {
                for lock in held.reversed() { try? lock.file.unlock() }
                transactionState.withLock { $0.holdsVaultLock = false }
                throw StoreError.system(error, .lock, "lock", path: path)
            }
            held.append(HeldLock(file: file, groups: groups))
        }
        for group in covered ?? [] { refreshGroupKeysIfReplaced(group) }
        return (held, covered)
    }

    /// The groups whose interrupted moves this transaction finishes: those it locked that this store
    /// has not recovered yet, plus those a dead writer left (`died`; nil: every group); nil for every
    /// group.
    private func firstWriteGroups(_ locked: Set<GroupName>?, died: Set<GroupName>?) -> Set<GroupName>? {
        housekeeping.withLock { state in
            if locked == nil {
                defer { state.movesRecovered = true }
                return state.movesRecovered && died != nil && died!.isEmpty ? [] : nil
            }
            let fresh = locked!.subtracting(state.movesRecoveredGroups)
            state.movesRecoveredGroups.formUnion(locked!)
            guard let died else { return nil }
            return fresh.union(died)
        }
    }

    /// Runs `body`, which makes a group, under the vault's `.lock` (unless this transaction holds it
    /// already): a whole-vault operation (a rekey, which seals every `group.key` again) then
    /// never misses a group made meanwhile, and a process whose keys a rekey replaced finds out before
    /// it seals a new group under them (`requireCurrentKeys`).
    func withGroupCreationLock<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        if transactionState.withLock({ $0.holdsVaultLock }) {
            try requireCurrentKeys()
            return try body()
        }
        let vaultLock = try currentVaultLockFile()
        do throws(Errno) {
            try vaultLock.lock(.exclusive)
        } catch {
            throw StoreError.system(error, .lock, "lock", path: location / Self.lockFileName)
        }
        defer { try? vaultLock.unlock() }
        try requireCurrentKeys()
        return try body()
    }

    /// Refuses to go on when `VAULT` no longer verifies under this store's `always` key: the vault was
    /// rekeyed after this process opened it, and a key file written now would be sealed under keys the
    /// vault no longer has. Under a lock that a rekey takes. Returns the marker as it is now (nil for a
    /// member).
    @discardableResult
    func requireCurrentKeys() throws(StoreError) -> VaultMarker? {
        guard let classKeys else { return nil }
        let markerPath = location / VaultMarker.fileName
        let bytes = try SmallFile.read(
            VaultMarker.fileName, in: directory, path: markerPath, limit: VaultMarker.maximumReadByteCount)
        do throws(StoreError) {
            let marker = try VaultMarker.decode(bytes, key: classKeys.always, path: markerPath)
            guard marker.vaultID == vaultID, marker.version == VaultMarker.formatVersion else {
                throw StoreError(.integrity, "\(markerPath) changed", path: markerPath.string)
            }
            return marker
        } catch {
            throw StoreError(
                .integrity,
                "the vault at \(path) was rekeyed (or replaced) after this process opened it: open it again; nothing "
                    + "was changed", path: markerPath.string, cause: error)
        }
    }

    /// This process's own open of the vault's `.lock`: after a fork, the child's first write opens it
    /// anew (see `lock`), so that parent and child exclude each other like any two processes.
    private func currentVaultLockFile() throws(StoreError) -> FileDescriptor {
        let pid = ProcessIdentity.processID
        if let file = lock.withLock({ $0.processID == pid ? $0.file : nil }) { return file }
        let reopened = try Self.ensureLockFile(in: directory, path: location)
        let inherited = lock.withLock { lock in
            defer { lock = (reopened, pid) }
            return lock.file
        }
        // Closing the inherited copy leaves the parent's lock alone: an OFD lock lives until the last
        // descriptor of its open file description closes, and the parent still has one.
        try? inherited?.close()
        return reopened
    }

    /// This process's own open of `group`'s `.lock`, reopened after a fork as the vault's.
    func currentGroupLockFile(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        let pid = ProcessIdentity.processID
        if let file = groupCommit.withLock({ state in
            state.groupLocks[group].flatMap { $0.processID == pid ? $0.file : nil }
        }) {
            return file
        }
        let reopened = try openGroupLockFile(group)
        // Another thread (group commit prepares outside the writer mutex) may have opened it meanwhile:
        // then that one stays, since its locks may be held already.
        let (current, unused) = groupCommit.withLock { state -> (FileDescriptor, FileDescriptor?) in
            if let existing = state.groupLocks[group], existing.processID == pid { return (existing.file, reopened) }
            defer { state.groupLocks[group] = (reopened, pid) }
            // Group commit's state is the parent's: its slots (held through the parent's descriptor),
            // and a flush mutex that may have been copied locked.
            state.claimedSlots[group] = nil
            state.flushLeaders[group] = nil
            state.lastTicket[group] = nil
            state.preparedWritesLeft[group] = nil
            return (reopened, state.groupLocks[group]?.file)
        }
        // The parent's copy (its locks stay the parent's, as above), or this thread's open that lost.
        try? unused?.close()
        return current
    }
}

/// The transaction this store runs, if any.
struct TransactionState {
    /// In the current transaction, a write through a spare failed or the spares could not be removed:
    /// a spare may be an item's file on disk. No spare is used until the next writer has removed them
    /// all (the transaction leaves `WriterMark.sparesUntrusted`).
    var spareUntrusted = false
    /// This process holds the vault's `.lock` (a whole-vault transaction), so that making a group
    /// inside it does not take (and then release) the lock again.
    var holdsVaultLock = false
    /// The thread that holds `writerMutex` (a transaction of this store), the groups it locked (nil:
    /// all), and the replicated groups it brought up to date (each once, on first touch).
    var writerThread: UInt?
    var transactionGroups: Set<GroupName>?
    var refreshedInTransaction: Set<GroupName> = []
    /// The threads whose transaction's replica write met a conflict: `withWriteLock` runs it again (by
    /// thread: another thread's transaction may start before this one's caller looks).
    var conflictedThreads: Set<UInt> = []
    /// The groups whose moves this transaction began and has not ended (`beginMove`, `endMove`): an
    /// intent note is left there, so the transaction does not stamp them tidy however it finishes.
    var openMoves: [GroupName: Int] = [:]
    /// The groups where a best-effort removal of this transaction failed (a temp file, a version past
    /// the bound, a move's note), or whose listing failed: not stamped tidy either.
    var leftBehind: Set<GroupName> = []
    /// The replicated groups each thread is scanning (with how many scans): its reads of their items
    /// skip the replica's check, which the scan made once before them.
    var scans: [UInt: [GroupName: Int]] = [:]
}
