import VaultStore

/// What `removeItem(_:primaryKey:)` removed.
public struct ItemRemoval: Sendable, Hashable {
    /// How many readable items were removed (one per group searched at most).
    public let removed: Int
    /// The item files removed without being read, because they failed authentication: their contents
    /// are lost.
    public let damaged: [ItemProblem]
}

/// Getting rid of damaged item files. A file that fails authentication can be neither read nor
/// overwritten through the usual paths (`update` and `delete` read it first), so these remove it by
/// name: an item's file name follows from its primary key (a keyed hash), so the file can be found
/// without decrypting it. Files that are locked (their class key is missing), of a newer format,
/// unsafe or unreadable are never removed: they may be sound.
extension Vault {
    /// Removes the item of `itemClass` whose primary-key attributes `primaryKey` gives (a generic
    /// password's service and account; an internet password's server, account, protocol, port, path,
    /// security domain and authentication type; missing ones are empty, as in `add`) from
    /// `primaryKey.accessGroup`, else from each of the client's groups, like `delete` does, and also
    /// when its file fails authentication: that file and its generation record are unlinked without
    /// being decrypted, under the write lock, and reported in `damaged`. A file of a locked class, of a
    /// newer format, unsafe or unreadable stops it with that error, and nothing is removed from its
    /// group. None found is `itemNotFound`.
    @discardableResult
    public func removeItem(_ itemClass: ItemClass, primaryKey: ItemAttributes) throws(VaultError) -> ItemRemoval {
        var key = ItemAttributes()
        key.accessGroup = primaryKey.accessGroup
        for attribute in ItemAttribute.primaryKey(of: itemClass) {
            switch attribute.valueType {
            case .blob, .fourCharacterCode: key[text: attribute] = primaryKey[text: attribute] ?? ""
            case .number: key.port = primaryKey.port ?? 0
            default: break
            }
        }
        key.synchronizable = primaryKey.synchronizable
        let query = Query(
            itemClass: itemClass, attributes: key, synchronizable: primaryKey.synchronizable == true ? .yes : .no)
        guard let canonical = query.fullPrimaryKey else {
            throw VaultError(.param, "removeItem needs a full primary key")
        }
        let groups = try searchGroups(query)
        return try withWriteLock(groups: groups) { tx throws(VaultError) in
            var removed = 0
            var damaged: [ItemProblem] = []
            for group in groups {
                let id = try engine.itemID(group, canonical)
                let record: ItemRecord
                do throws(VaultError) {
                    guard let loaded = try engine.load(group, id), query.matches(loaded, group: group) else { continue }
                    record = loaded
                } catch  where ItemProblem.isAuthenticationFailure(error, of: engine.filePath(group, id)) {
                    try remove(group, id, in: tx)
                    damaged.append(ItemProblem(path: engine.filePath(group, id), group: group, id: id, error: error))
                    continue
                }
                // A sound item leaves a tombstone in its history, as every delete does.
                try engine.delete([LocatedItem(group: group, id: id, record: record)], in: tx)
                removed += 1
            }
            guard removed > 0 || !damaged.isEmpty else { throw notFound(query) }
            return ItemRemoval(removed: removed, damaged: damaged)
        }
    }

    /// Removes the item files among `problems` (what `verifyAll` or `search` reported) that failed
    /// authentication and still do: under the write lock each is read again first, so that a file
    /// replaced since (a writer put a new value there) is kept. Their generation records go with
    /// them. Problems that are not authentication failures (a locked class, an unreadable or unsafe
    /// file, a newer format, a record that does not decode) are left alone. Returns the problems whose
    /// files were removed, as they stand now.
    @discardableResult
    public func removeDamaged(_ problems: [ItemProblem]) throws(VaultError) -> [ItemProblem] {
        let candidates = problems.filter { $0.failedAuthentication && $0.itemID != nil }
        guard !candidates.isEmpty else { return [] }
        let groups = Set(candidates.compactMap { try? AccessGroup($0.group) })
        return try withWriteLock(groups: Array(groups)) { tx throws(VaultError) in
            var removed: [ItemProblem] = []
            for problem in candidates {
                guard let id = problem.itemID, let group = try? AccessGroup(problem.group) else { continue }
                if let generation = problem.version {
                    if try removeDamagedVersion(group, id, generation: generation, path: problem.path, in: tx) {
                        removed.append(problem)
                    }
                    continue
                }
                do throws(VaultError) {
                    _ = try engine.load(group, id)  // gone, or readable again: nothing to remove
                } catch  where ItemProblem.isAuthenticationFailure(error, of: problem.path) {
                    try remove(group, id, in: tx)
                    removed.append(ItemProblem(path: engine.filePath(group, id), group: group, id: id, error: error))
                } catch {
                    continue  // no longer an authentication failure: it may be sound
                }
            }
            return removed
        }
    }

    /// Removes kept version `generation` of item `id` (its file at `path`) if it still fails
    /// authentication; whether it did.
    private func removeDamagedVersion(
        _ group: AccessGroup, _ id: ItemID, generation: UInt64, path: String, in tx: WriteTransaction
    ) throws(VaultError) -> Bool {
        let item = ItemLocation(group: group.name, id: id)
        do throws(VaultError) {
            _ = try engine.store.readVersion(item, generation: generation) { (bytes, path) throws(VaultError) in
                try engine.decode(bytes, path: path)
            }
            return false  // gone, or readable again
        } catch  where ItemProblem.isAuthenticationFailure(error, of: path) {
            return try translatingStoreErrors { () throws(StoreError) in
                try tx.removeVersion(item, generation: generation)
            }
        } catch {
            return false  // no longer an authentication failure: it may be sound
        }
    }

    private func remove(_ group: AccessGroup, _ id: ItemID, in tx: WriteTransaction) throws(VaultError) {
        _ = try translatingStoreErrors { () throws(StoreError) in try tx.delete(ItemLocation(group: group.name, id: id))
        }
    }
}
