import FoundationEssentials
import VaultArchive
import VaultStore

/// The common cases, in the spirit of KeychainAccess and Valet, but without swallowing errors: "not
/// found" is nil (or false), every other failure throws.
extension Vault {
    /// Stores `data` under `key`, adding the item or updating its secret, as one atomic operation under
    /// the vault's lock (never delete-then-add). A new item gets `accessibility`.
    public func set(_ data: Data, for key: ItemKey, accessibility: Accessibility = .afterFirstUnlock)
        throws(VaultError)
    {
        try upsert(key, accessibility: accessibility, preparing: data) { _ in data }
    }

    /// Stores `string` as UTF-8 under `key` (see `set(_:for:accessibility:)`).
    public func set(_ string: String, for key: ItemKey, accessibility: Accessibility = .afterFirstUnlock)
        throws(VaultError)
    {
        try set(Data(string.utf8), for: key, accessibility: accessibility)
    }

    /// Stores `value` as a VaultArchive under `key` (see `set(_:for:accessibility:)`).
    public func set<T: Encodable>(_ value: T, for key: ItemKey, accessibility: Accessibility = .afterFirstUnlock)
        throws(VaultError)
    {
        let data: Data
        do {
            data = try VaultArchive.encodeData(value)
        } catch let error as EncodingError {
            // Not the error itself, nor as the cause: it carries the value, which is the secret.
            throw VaultError(.param, "cannot archive the value for \(key): \(error.redactedDescription)")
        } catch {
            throw VaultError(.param, "cannot archive the value for \(key): \(error)", cause: error)
        }
        try set(data, for: key, accessibility: accessibility)
    }

    /// The secret stored under `key`, or nil when there is none.
    public func data(for key: ItemKey) throws(VaultError) -> Data? {
        do {
            return try copyMatching(key.query, returning: [.data]).first?.data
        } catch  where error.status == .itemNotFound {
            return nil
        }
    }

    /// The secret under `key` as UTF-8 text, or nil when there is none; bytes that are not UTF-8 are a
    /// `decode` error.
    public func string(for key: ItemKey) throws(VaultError) -> String? {
        guard let data = try data(for: key) else { return nil }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw VaultError(.decode, "the secret of \(key) is not UTF-8 text")
        }
        return text
    }

    /// The value archived under `key`, or nil when there is none; bytes that are not an archive of `T`
    /// are a `decode` error.
    public func value<T: Decodable>(_ type: T.Type, for key: ItemKey) throws(VaultError) -> T? {
        guard let data = try data(for: key) else { return nil }
        do {
            return try VaultArchive.decode(T.self, from: data)
        } catch {
            throw VaultError(.decode, "the secret of \(key) is not an archive of \(T.self): \(error)", cause: error)
        }
    }

    /// Removes the item under `key`; returns false when there was none.
    @discardableResult
    public func remove(_ key: ItemKey) throws(VaultError) -> Bool {
        do {
            return try delete(key.query) > 0
        } catch  where error.status == .itemNotFound {
            return false
        }
    }

    /// Whether an item exists under `key`.
    public func contains(_ key: ItemKey) throws(VaultError) -> Bool {
        do {
            return !(try copyMatching(key.query, returning: [])).isEmpty
        } catch  where error.status == .itemNotFound {
            return false
        }
    }

    /// The keys of every generic password the client can see (non-synchronizable ones, as Apple's
    /// default), sorted by group, service and account.
    public func allKeys() throws(VaultError) -> [ItemKey] {
        let items: [MatchedItem]
        do {
            items = try copyMatching(Query(itemClass: .genericPassword, limit: .all), returning: [.attributes])
        } catch  where error.status == .itemNotFound {
            return []
        }
        return items.compactMap { item in
            try? ItemKey(
                service: item.attributes.service ?? "", account: item.attributes.account ?? "",
                group: item.attributes.accessGroup)
        }.sorted {
            ($0.group?.rawValue ?? "", $0.service, $0.account) < ($1.group?.rawValue ?? "", $1.service, $1.account)
        }
    }

    /// Atomically reads, transforms and writes the secret under `key`, under the vault's lock: no other
    /// writer in any process can come between the read and the write. `transform` gets the current
    /// secret (nil when there is none) and returns the new one (nil removes the item). Returns the new
    /// secret.
    @discardableResult
    public func modify(
        _ key: ItemKey, accessibility: Accessibility = .afterFirstUnlock, _ transform: (Data?) throws -> Data?
    ) throws(VaultError) -> Data? {
        try upsert(key, accessibility: accessibility, transform)
    }

    /// The read-transform-write of `modify` and `set`. `preparing`: the new secret whatever the current
    /// one is (a `set`), which lets the write be made ready before the lock (group commit,
    /// `ItemEngine.prepareSet`): then the lock is held only to check that the item is still the one
    /// read and to publish the write, and the directory fsync is shared with other writers after it.
    @discardableResult
    func upsert(
        _ key: ItemKey, accessibility: Accessibility, preparing newData: Data? = nil,
        _ transform: (Data?) throws -> Data?
    ) throws(VaultError) -> Data? {
        let query = key.query
        let groups = try searchGroups(query)
        let target = try client.targetGroup(for: key.group)
        // Prepared only when other writers are about: for a lone writer, the write under the lock costs
        // less (no read before the lock, no slot, no shared flush to arrange).
        let prepared = newData.flatMap { data in
            groups == [target] && engine.store.othersWriteToo(target.name)
                ? engine.prepareSet(data, for: key, accessibility: accessibility, in: target) : nil
        }
        let result: Data?
        do {
            result = try upsertLocked(
                key, query: query, groups: groups, target: target, accessibility: accessibility, prepared: prepared,
                transform)
        } catch {
            if let prepared { try? engine.store.finish(prepared.write) }
            throw error
        }
        if let prepared {
            try translatingStoreErrors { () throws(StoreError) in try engine.store.finish(prepared.write) }
        }
        return result
    }

    private func upsertLocked(
        _ key: ItemKey, query: Query, groups: [AccessGroup], target: AccessGroup, accessibility: Accessibility,
        prepared: ItemEngine.PreparedSet?, _ transform: (Data?) throws -> Data?
    ) throws(VaultError) -> Data? {
        try withWriteLock(groups: groups, creating: [target]) { tx throws(VaultError) in
            let found = try engine.find(query, in: groups, underWriteLock: true)
            let current = found.first
            if let prepared, prepared.wasMade(from: current),
                current != nil || (try? engine.firstGeneration(target, prepared.id)) == prepared.generation,
                try translatingStoreErrors({ () throws(StoreError) in try tx.commit(prepared.write) })
            {
                return prepared.data
            }
            let newValue: Data?
            do {
                newValue = try transform(current?.record.data)
            } catch let error as VaultError {
                throw error
            } catch {
                throw VaultError(.param, "the transform for \(key) failed: \(error)")
            }
            switch (current, newValue) {
            case (nil, nil):
                return nil
            case (let item?, nil):
                try engine.delete([item], in: tx)
                return nil
            case (let item?, let data?):
                _ = try engine.update([item], with: ItemChanges(data: data), client: client, in: tx)
                return data
            case (nil, let data?):
                _ = try engine.add(
                    .genericPassword, attributes: key.attributes(accessibility: accessibility), data: data,
                    group: target, in: tx)
                return data
            }
        }
    }
}
