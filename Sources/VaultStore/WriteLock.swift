import VaultSystem

/// The write lock: this process's writer mutex and an exclusive OFD lock on `.lock`, and what a writer
/// does when it takes the lock from one that died holding it (`WriterMark`): sweep the temp files of
/// every group, remove every spare, finish half-done moves.
extension VaultStore {
    /// Runs `body` holding the vault's write lock, so that a check-then-act in `body` cannot interleave
    /// with any other writer, in this process or another. The lock is released when `body` returns or
    /// throws (or the process dies). Before `body`, the transaction cleans up after a writer that died
    /// (and, at the first write of this store, after any writer since the vault was last written): temp
    /// files, spares and interrupted moves. Failures of the store come as `Failure(storeError)`.
    public func withWriteLock<R, Failure: StoreErrorConvertible>(
        _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        try withWriteLock(finishingMoves: true, body)
    }

    /// `withWriteLock`; without `finishingMoves`, for the writes of key files (passphrase changes,
    /// rekeys), which touch no item and leave interrupted moves to the next item write.
    func withWriteLock<R, Failure: StoreErrorConvertible>(
        finishingMoves: Bool, _ body: (WriteTransaction) throws(Failure) -> R
    ) throws(Failure) -> R {
        try writerMutex.withLock { (_) throws(Failure) -> R in
            let lockFile: FileDescriptor = try Failure.converting { () throws(StoreError) in
                let lockFile = try currentLockFile()
                do throws(Errno) {
                    try lockFile.lock(.exclusive)
                } catch {
                    throw StoreError.system(error, .lock, "lock", path: location / Self.lockFileName)
                }
                return lockFile
            }
            defer { try? lockFile.unlock() }
            let found = WriterMark.read(lockFile)
            let marked = WriterMark.active.write(to: lockFile)
            // An unreadable mark is taken as a death: the cleanup is what is always safe.
            let previousWriterDied = found == nil || found == .active
            state.withLock { $0.spareUntrusted = false }
            defer { (state.withLock { $0.spareUntrusted } ? WriterMark.sparesUntrusted : .idle).write(to: lockFile) }
            if previousWriterDied {
                // Its temp files may be in any group, and this handle may have cleaned up long ago. Clean
                // every group now: this writer may not write (a delete), and the next writer will not
                // know that anyone died.
                state.withLock { state in
                    state.cleanedGroups = []
                    state.cleanedVaultDirectory = false
                }
                removeStaleTemporaryFilesInEveryGroup()
            }
            // A spare is written in place only when the exchange that made it the spare is durable. After
            // anything but a normal finish, remove every spare first; if that fails, use none and leave
            // the mark for the next writer. A writer that cannot set the mark uses none either: its own
            // death would go unnoticed.
            var reusesSpares = marked
            if found != .idle, !removeEverySpare() {
                reusesSpares = false
                state.withLock { $0.spareUntrusted = true }
            }
            removeStaleTemporaryFilesInVaultDirectory()
            let transaction = WriteTransaction(store: self, reusesSpares: reusesSpares)
            let firstWrite =
                finishingMoves
                && state.withLock { state in
                    defer { state.movesRecovered = true }
                    return !state.movesRecovered
                }
            if finishingMoves && (firstWrite || previousWriterDied) {
                try Failure.converting { () throws(StoreError) in try finishInterruptedMoves(in: transaction) }
            }
            return try body(transaction)
        }
    }

    /// This process's own open of `.lock`: after a fork, the child's first write opens it anew (see
    /// `lock`), so that parent and child exclude each other like any two processes.
    private func currentLockFile() throws(StoreError) -> FileDescriptor {
        let pid = ProcessIdentity.processID
        if let file = lock.withLock({ $0.processID == pid ? $0.file : nil }) { return file }
        let reopened = try Self.ensureLockFile(in: directory, path: location)
        let inherited = lock.withLock { lock in
            defer { lock = (reopened, pid) }
            return lock.file
        }
        // Closing the inherited copy leaves the parent's lock alone: an OFD lock lives until the last
        // descriptor of its open file description closes, and the parent still has one.
        try? inherited.close()
        return reopened
    }
}
