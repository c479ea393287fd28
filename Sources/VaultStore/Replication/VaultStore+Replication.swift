import VaultSystem

/// Replicated groups: a group whose `group.key` marks it replicated (a fleet group) has a replica that
/// every machine shares, reached through the `Replication` given to `open`; its directory is the
/// replica's cache. The store brings the cache up to date before a read (as the replica decides) and at
/// a transaction's first touch of the group, and sends every write and delete to the replica first.
extension VaultStore {
    /// The replica of `group`, or nil for a group that is not replicated (or does not exist yet).
    func replica(for group: GroupName) throws(StoreError) -> (any GroupReplica)? {
        if let known = replicas.withLock({ $0.replicas[group] }) { return known }
        // A group whose keys cannot be read is no replicated group to this store: nothing of it can be
        // read or written either.
        guard let keys = try? keys(for: group), !keys.isAbsent else { return nil }
        guard keys.isFleet else {
            replicas.withLock { $0.replicas[group] = .some(nil) }
            return nil
        }
        guard let replication else {
            throw StoreError(
                .cryptoUnavailable,
                "group \(group) is a fleet group (its items are replicated to other machines), and this program "
                    + "opened the vault at \(path) without a fleet client, so nothing of the group is read or written: "
                    + "open it with one",
                path: groupPath(group).string)
        }
        let made = try replication.replica(of: group, cache: ReplicaCache(store: self, group: group))
        // Threads that made one at once all use the first kept: its state (when etcd was last out of
        // reach, its watch) is the group's in this process.
        return replicas.withLock { (state) -> (any GroupReplica)? in
            if let kept = state.replicas[group] { return kept }
            state.replicas[group] = .some(made)
            return made
        }
    }

    /// The replica of `group` if this store has made it already (for its status), without making it.
    package func knownReplica(of group: GroupName) -> (any GroupReplica)? {
        replicas.withLock { $0.replicas[group] ?? nil }
    }

    /// The replica of replicated group `group`; `groupNotFound` or `invalidName` when there is no such
    /// group or it is not replicated.
    package func requireReplica(of group: GroupName) throws(StoreError) -> any GroupReplica {
        if let replica = try replica(for: group) { return replica }
        throw try notAFleetGroup(group)
    }

    /// The refusal of `group` where a fleet group is needed: `groupNotFound` when the vault has no such
    /// group, `invalidName` when it is a group of another kind.
    func notAFleetGroup(_ group: GroupName) throws(StoreError) -> StoreError {
        guard try groupDirectory(group, create: false) != nil else {
            return StoreError(
                .groupNotFound, "there is no group \(group) in the vault at \(path)", path: groupPath(group).string)
        }
        return StoreError(.invalidName, "group \(group) is not a fleet group", path: groupPath(group).string)
    }

    /// What `replica` may do to `group`'s directory.
    package func replicaCache(of group: GroupName) -> ReplicaCache { ReplicaCache(store: self, group: group) }

    /// Before a read of `group`: a replicated group's cache is brought up to date, once per transaction
    /// inside this thread's transaction (only for a group whose lock it holds), else as its replica
    /// decides. Returns whether this call changed the cache inside this thread's transaction: then what
    /// the transaction read of the group before may be stale (a write then runs it again).
    @discardableResult
    func refreshReplicaIfStale(_ group: GroupName) throws(StoreError) -> Bool {
        guard let replica = try replica(for: group) else { return false }
        let thread = ProcessIdentity.threadID
        let inTransaction = transactionState.withLock { (state) -> Bool? in
            guard state.writerThread == thread else {
                // Outside a transaction, in a scan of the group by this thread: checked once, before it.
                return state.scans[thread]?[group] != nil ? true : nil
            }
            guard state.transactionGroups?.contains(group) ?? true, !state.refreshedInTransaction.contains(group)
            else { return true }
            state.refreshedInTransaction.insert(group)
            return false
        }
        let cache = ReplicaCache(store: self, group: group)
        do throws(StoreError) {
            switch inTransaction {
            case true?: return false
            case false?: return try replica.refreshInTransaction(cache)
            case nil:
                try replica.prepareRead(cache)
                return false
            }
        } catch  where error.path == nil {
            // The group's failure (a replica that went back, etcd out of reach), named by its directory:
            // without a path it would read as a failure of the item file being read, which a repair
            // removes.
            throw StoreError(error.code, error.message, path: cache.groupPath, cause: error.cause)
        }
    }

    /// Runs `body`, a scan of `group` on this thread, after one check of a replicated group's cache
    /// (`refreshReplicaIfStale`): its reads of the group's items inside skip theirs, and see the state
    /// that check confirmed (a check an item would cost a scan one request to the replica each).
    package func scanning<R, E: Error>(_ group: GroupName, _ body: () throws(E) -> R) throws(StoreError) -> Result<R, E>
    {
        _ = try refreshReplicaIfStale(group)
        let thread = ProcessIdentity.threadID
        transactionState.withLock { $0.scans[thread, default: [:]][group, default: 0] += 1 }
        defer {
            transactionState.withLock { state in
                state.scans[thread]?[group]? -= 1
                if state.scans[thread]?[group] == 0 { state.scans[thread]?[group] = nil }
                if state.scans[thread]?.isEmpty == true { state.scans[thread] = nil }
            }
        }
        do throws(E) {
            return .success(try body())
        } catch {
            return .failure(error)
        }
    }

    /// Brings replicated group `group`'s cache up to date now, under its lock.
    package func refreshReplicatedGroup(_ group: GroupName) throws(StoreError) {
        try withWriteLock(groups: [group]) { (_) throws(StoreError) in _ = try refreshReplicaIfStale(group) }
    }

    /// Before a replica write: the group brought up to date in this transaction (now, if nothing read it
    /// yet). A refresh now that changed the cache means what the transaction decided on may be stale: a
    /// `conflict`, which runs the transaction again.
    func requireUnchangedReplica(_ group: GroupName) throws(StoreError) {
        guard try refreshReplicaIfStale(group) else { return }
        transactionState.withLock { _ = $0.conflictedThreads.insert(ProcessIdentity.threadID) }
        throw StoreError(.conflict, "fleet group \(group) changed on another machine during this transaction")
    }

    /// After a replica write whose local half failed with `error`: the next read refreshes the cache,
    /// and the error to throw says that the change reached the replica (`StoreError.afterReplicaCommit`).
    func localHalfFailed(_ error: StoreError, group: GroupName, _ replica: any GroupReplica) -> StoreError {
        replica.forgetCache()
        return .afterReplicaCommit(error, group: group, replica: replica.name)
    }

    /// Runs a replica's write; a `conflict` is noted for `withWriteLock`, which then runs the whole
    /// transaction again on a fresh cache.
    func noticingConflicts(_ body: () throws(StoreError) -> Void) throws(StoreError) {
        do {
            try body()
        } catch  where error.code == .conflict {
            transactionState.withLock { _ = $0.conflictedThreads.insert(ProcessIdentity.threadID) }
            throw error
        }
    }

    /// Whether `group` is replicated (a fleet group: its `group.key` says so).
    package func isFleetGroup(_ group: GroupName) -> Bool {
        if let known = replicas.withLock({ $0.replicas[group] }) { return known != nil }
        return (try? keys(for: group))?.isFleet == true
    }

    /// Whether group `group` of the vault at `vaultPath` is a fleet group, by the flags of its
    /// `group.key` (read unchecked, before the vault is opened: to choose a program, never to trust).
    package static func isFleetGroup(vaultPath: String, group: GroupName) -> Bool {
        let path = FilePath(vaultPath) / groupsDirectoryName / group.rawValue
        guard let directory = try? FileDescriptor.currentWorkingDirectory.openAt(path.string, [.directory]) else {
            return false
        }
        defer { try? directory.close() }
        guard
            let header = try? SmallFile.readPrefix(
                GroupKeyFile.fileName, in: directory, path: path / GroupKeyFile.fileName,
                prefix: 8, minimumSize: 28, limit: GroupKeyFile.maximumByteCount, what: "a group key file")
        else { return false }
        return header.count == 8 && Array(header[0..<4]) == GroupKeyFile.magic && header[5] & 2 == 2
    }

    // MARK: The cache, for the replica

    /// The cached file of `item`, or nil.
    func cachedItemFile(_ item: ItemLocation) throws(StoreError) -> [UInt8]? {
        guard let directory = try groupDirectory(item.group, create: false) else { return nil }
        return try SmallFile.readIfPresent(
            item.id.fileName, in: directory, path: itemPath(item), limit: ItemFile.maximumFileByteCount)
    }

    /// Caches `contents` as `item`'s file once it opens as that item under the group's keys.
    func cacheItemFile(_ contents: [UInt8], as item: ItemLocation) throws(StoreError) {
        try checkItemFile(contents, as: item)
        let directory = try existingGroupDirectory(item.group)
        // The item's generation record goes with it: the replica's file may be of an older generation
        // than this machine wrote (a rollback an operator accepted), and the replica guards versions.
        try ItemWrite(
            contents: contents, name: item.id.fileName, record: (GenerationRecord.name(item.id), nil), durable: true,
            reusingSpare: false, permissions: memberFilePermissions(item.group)
        )
        .run(in: directory, directoryPath: groupPath(item.group))
    }

    /// Removes `item`'s cached file and its generation record.
    func uncacheItemFile(_ item: ItemLocation) throws(StoreError) {
        guard let directory = try groupDirectory(item.group, create: false) else { return }
        _ = try AtomicFile.remove(
            item.id.fileName, in: directory, directoryPath: groupPath(item.group),
            alsoRemove: GenerationRecord.name(item.id))
    }

    /// Checks that `contents` opens under the group's keys as `item`; `integrity` otherwise.
    func checkItemFile(_ contents: [UInt8], as item: ItemLocation) throws(StoreError) {
        _ = try openItemFile(contents, as: item, path: itemPath(item))
    }
}

/// Each replicated group's replica, as a store made it (nil inside: the group is not replicated).
struct ReplicaTable {
    var replicas: [GroupName: (any GroupReplica)?] = [:]
}

extension VaultStore {
    /// Forgets what this store read of `group`'s keys and replica (the group was made or removed).
    func forgetKeysAndReplica(of group: GroupName) {
        _ = keyCache.withLock { $0.groupKeys.removeValue(forKey: group) }
        _ = replicas.withLock { $0.replicas.removeValue(forKey: group) }
    }
}
