import VaultSystem

/// What writers clean up under the lock: temp files of writers that died (they exist only while a
/// writer holds the lock, so under the lock any temp file is a leftover), versions past the bound (a
/// writer that died before its pruning), spares that may still be an item's file on disk, and a bulk
/// load's deferred flush. Temp files and versions go at each store's first write to a group unless its
/// last writer left it tidy in this boot (`WriterMark`), and again at any write that finds a dead
/// writer's mark.
extension VaultStore {
    /// Removes `group`'s temp files once per group per open store (and again after a death); `listed`
    /// is the group's listing when the caller has just made one under the lock.
    func removeStaleTemporaryFiles(group: GroupName, directory: FileDescriptor, listed: [String]? = nil) {
        if housekeeping.withLock({ $0.cleanedGroups.contains(group) }) { return }
        guard let names = listed ?? (try? directory.entryNames()) else {
            noteLeftBehind(group)
            return
        }
        var removed = true
        for name in names where name.hasPrefix(AtomicFile.temporaryPrefix) {
            if (try? directory.unlinkAt(name)) == nil { removed = false }
        }
        if !pruneHistory(names, in: directory) { removed = false }
        // Not tried again by this store (a directory planted under a temp file's name stays), but not
        // stamped tidy either.
        housekeeping.withLock { _ = $0.cleanedGroups.insert(group) }
        if !removed { noteLeftBehind(group) }
    }

    /// Removes the versions past the bound among a group directory's `names` (its listing), under the
    /// group's lock: what a writer that died between a version's link and its pruning left, and
    /// (`exactly`) what a lowered bound leaves (`setVersionsKept`). False when one could not be removed,
    /// or an item keeps more than the bound for now (`ItemHistory.excess`).
    @discardableResult
    func pruneHistory(_ names: [String], in directory: FileDescriptor, exactly: Bool = false) -> Bool {
        let excess = ItemHistory.excess(among: names, kept: versionsKept, exactly: exactly) { id in
            GenerationRecord.recordedGeneration(id, in: directory)
        }
        var removed = !excess.unresolved
        for name in excess.names where (try? directory.unlinkAt(name)) == nil { removed = false }
        return removed
    }

    /// Records that the running transaction leaves something of `group`'s to clean up (a failed
    /// best-effort removal): the group is not stamped tidy (`WriterMark`), so the next process sweeps it.
    func noteLeftBehind(_ group: GroupName) {
        transactionState.withLock { _ = $0.leftBehind.insert(group) }
    }

    /// Removes the temp files of `groups` (nil: every group), under their lock, after a writer died.
    func removeStaleTemporaryFiles(in groups: Set<GroupName>?) {
        for group in groups.map({ Array($0) }) ?? ((try? self.groups()) ?? []) {
            guard let directory = try? groupDirectory(group, create: false) else { continue }
            removeStaleTemporaryFiles(group: group, directory: directory)
        }
    }

    /// Forgets which directories that `lock` guards were cleaned: a writer died holding it.
    func forgetCleaned(_ lock: HeldLock) {
        housekeeping.withLock { state in
            if let groups = lock.groups { state.cleanedGroups.subtract(groups) } else { state.cleanedGroups = [] }
            if lock.guardsVaultDirectory { state.cleanedVaultDirectory = false }
        }
    }

    /// Init leaves a temp file in the vault directory only when even its removal failed; the first
    /// writer of each open store removes such leftovers.
    func removeStaleTemporaryFilesInVaultDirectory() {
        let first = housekeeping.withLock { state in
            defer { state.cleanedVaultDirectory = true }
            return !state.cleanedVaultDirectory
        }
        guard first else { return }
        for name in (try? directory.entryNames()) ?? [] where name.hasPrefix(AtomicFile.temporaryPrefix) {
            try? directory.unlinkAt(name)
        }
    }

    /// Unlinks the spares of each of `groups` (nil: every group): `.spare`, and unless the group is
    /// known to be private (its key read here) every writer's `.spare.<uid>`, found by listing the
    /// directory, since the writer that died may have been any member of a shared group. False when one may remain (the groups could
    /// not be listed, a group directory not opened or listed, or an unlink failed).
    func removeSpares(in groups: Set<GroupName>?) -> Bool {
        guard let groups = groups.map({ Array($0) }) ?? (try? self.groups()) else { return false }
        var removed = true
        for group in groups {
            do throws(StoreError) {
                guard let directory = try groupDirectory(group, create: false) else { continue }
                var names = [SpareFile.name]
                let keys = try? keys(for: group)
                if keys == nil || keys!.isShared || keys!.isAbsent {
                    guard let entries = try? directory.entryNames() else {
                        removed = false
                        continue
                    }
                    names += entries.filter(SpareFile.isSharedSpare)
                }
                for name in names {
                    do {
                        try directory.unlinkAt(name)
                    } catch {
                        if error != .noSuchFileOrDirectory { removed = false }
                    }
                }
            } catch {
                removed = false
            }
        }
        return removed
    }

    /// Runs `body` with per-write fsyncs skipped, then makes everything durable at once with one
    /// `syncfs` of the vault's file system. Writes stay atomic (rename) but are durable only when this
    /// returns; for filling a vault in bulk (benchmarks, imports), never for ordinary writes.
    package func withBulkLoad<R, Failure: StoreErrorConvertible>(_ body: () throws(Failure) -> R) throws(Failure) -> R {
        housekeeping.withLock { $0.bulkLoading = true }
        defer { housekeeping.withLock { $0.bulkLoading = false } }
        let result = try body()
        do {
            try directory.syncFileSystem()
        } catch {
            throw Failure(StoreError.system(error, .fsync, "syncfs", path: location))
        }
        return result
    }
}

/// The cleanups a store has done since it was opened, and whether it is loading in bulk.
struct HousekeepingState {
    /// The groups whose interrupted moves were finished since the store was opened, or found tidy.
    var movesRecoveredGroups: Set<GroupName> = []
    /// The groups whose stale temp files were removed, or found tidy.
    var cleanedGroups: Set<GroupName> = []
    var cleanedVaultDirectory = false
    /// Whether the moves that a dead writer left were finished since the store was opened (`Moves`).
    var movesRecovered = false
    /// Item writes are not flushed one by one (`bulkLoad`).
    var bulkLoading = false
}
