import FoundationEssentials
import VaultStore

/// One version in an item's history (`Vault.history(of:)`): what `vault history` lists. Never a secret.
public struct ItemVersionInfo: Sendable, Equatable {
    /// The version's number: the item's generation (1 when first added, +1 on every change, a
    /// deletion included, and on across a deletion when the item is made again).
    public let number: UInt64
    /// When it was written.
    public let date: Date
    /// The effective uid that wrote it; nil for a version written before writers were recorded.
    public let writerID: UInt32?
    /// The program that wrote it (its client's application identifier, or the program's name).
    public let client: String?
    /// Whether this version is a deletion (a tombstone): it has no secret, and `restore` of an older
    /// version undoes it.
    public let isDeletion: Bool
    /// Whether this is the item's current version.
    public let isCurrent: Bool
}

/// Item history: every change to a generic password keeps the previous version (a bounded number of
/// them, `versionsKept`), so that a bad rotation or a deletion can be undone; check-and-set for writers
/// that must not overwrite each other. A fleet group's history is kept in etcd, beside its items: every
/// machine reads the same versions, which record no writer there.
extension Vault {
    /// How many versions of each item this vault keeps before the current one (of a deleted item,
    /// before its tombstone): the vault's setting, or 10.
    public var versionsKept: Int { engine.store.versionsKept }

    /// The versions of the item under `key`, oldest first, the current one (if it has not been deleted)
    /// last; a version that fails its checks is left out (`data(for:version:)` reports it).
    /// `itemNotFound` when it has neither a current version nor a kept one.
    public func history(of key: ItemKey) throws(VaultError) -> [ItemVersionInfo] {
        let (group, id) = try historyLocation(key)
        let current = try engine.loadCurrent(group, id)
        let kept = try keptGenerations(group, id)
        // Versions at or past the current one are leftovers of a writer that died (the current file
        // linked, a tombstone whose delete never happened) and those below the bound await pruning.
        let newest = current?.generation ?? kept.last ?? 0
        let oldest = newest - min(newest, UInt64(versionsKept))
        var versions: [ItemVersionInfo] = []
        for generation in kept where generation < current?.generation ?? .max && generation >= oldest {
            // A version that fails its checks (damaged, or a file planted under a version's name) is
            // left out, so that it hides none of the others; `data(for:version:)` says what is wrong.
            let record: ItemRecord?
            do {
                record = try version(generation, group, id)
            } catch  where error.status != .interactionNotAllowed {
                continue
            }
            guard let record else { continue }
            versions.append(Self.info(record, isCurrent: false))
        }
        if let current { versions.append(Self.info(current, isCurrent: true)) }
        guard !versions.isEmpty else { throw notFound(key.query) }
        return versions
    }

    /// The secret of version `number` of the item under `key`; nil when the item has no such version
    /// (pruned, or never written). A deletion's version is a `param` error: it holds no secret.
    public func data(for key: ItemKey, version number: UInt64) throws(VaultError) -> Data? {
        let (group, id) = try historyLocation(key)
        if let current = try engine.loadCurrent(group, id) {
            if current.generation == number { return current.data }
            // Past the current version there is only what a writer that died left (`history(of:)`).
            if number > current.generation { return nil }
        }
        guard let record = try version(number, group, id) else { return nil }
        guard !record.isDeletion else {
            throw VaultError(
                .param, "version \(number) of \(key) is its deletion and holds no secret; ask for an older version")
        }
        return record.data
    }

    /// Makes version `number` of the item under `key` current again, as a new version (history is never
    /// rewritten): after a bad rotation, or after a deletion. Returns the new version's number.
    @discardableResult
    public func restore(_ key: ItemKey, version number: UInt64) throws(VaultError) -> UInt64 {
        let (group, id) = try historyLocation(key)
        return try withWriteLock(groups: [group]) { tx throws(VaultError) in
            let current = try engine.load(group, id)
            // The current version itself, and past it only what a writer that died left (`history(of:)`).
            let kept: ItemRecord?
            if let current, number >= current.generation {
                kept = number == current.generation ? current : nil
            } else {
                kept = try version(number, group, id)
            }
            guard let old = kept else {
                throw VaultError(
                    .itemNotFound,
                    "\(key) has no version \(number); `vault history` lists the versions it keeps")
            }
            guard !old.isDeletion else {
                throw VaultError(
                    .param, "version \(number) of \(key) is its deletion; restore a version before it")
            }
            // After the current version, or after the deletion (its tombstone, or the number its record
            // keeps when it left none).
            var latest = number
            if let current {
                latest = current.generation
            } else {
                latest = max(try keptGenerations(group, id).max() ?? number, try engine.firstGeneration(group, id) - 1)
            }
            var restored = old
            restored.generation = latest
            restored.advance(modifiedAt: ItemRecord.now())
            restored.isDeletion = false
            if let current {
                restored.persistentID = current.persistentID
                restored.created = current.created
            }
            try engine.save(restored, group: group, id: id, in: tx)
            return restored.generation
        }
    }

    /// Removes the item under `key` and every version of it: nothing of it is left to restore. Returns
    /// false when there was nothing.
    @discardableResult
    public func purge(_ key: ItemKey) throws(VaultError) -> Bool {
        let group: AccessGroup
        let id: ItemID
        do {
            (group, id) = try historyLocation(key)
        } catch  where error.status == .itemNotFound {
            return false
        }
        return try withWriteLock(groups: [group]) { tx throws(VaultError) in
            // A file of a locked class is never removed unread, as a delete never removes one; a damaged
            // one is (it holds nothing to keep).
            do throws(VaultError) {
                _ = try engine.load(group, id)
            } catch  where error.status == .interactionNotAllowed {
                throw error
            } catch {
                // Damaged: removed with the rest.
            }
            return try translatingStoreErrors { () throws(StoreError) in
                try tx.purge(ItemLocation(group: group.name, id: id))
            }
        }
    }

    /// The current version number of the item under `key`; nil when there is no item.
    public func currentVersion(of key: ItemKey) throws(VaultError) -> UInt64? {
        let groups = try searchGroups(key.query)
        guard let item = try engine.find(key.query, in: groups).first else { return nil }
        return item.record.generation
    }

    /// Stores `data` under `key` only if the item's current version is `expected` (0: only if there is
    /// no item), as one step under the group's lock: the safe way for several writers to rotate one
    /// secret. Another writer's change in between is a `duplicateItem` error that says which version is
    /// current, and nothing is written. Returns the new version's number.
    @discardableResult
    public func set(
        _ data: Data, for key: ItemKey, ifVersion expected: UInt64, accessibility: Accessibility = .afterFirstUnlock
    ) throws(VaultError) -> UInt64 {
        let query = key.query
        let groups = try searchGroups(query)
        let target = try client.targetGroup(for: key.group)
        return try withWriteLock(groups: groups, creating: [target]) { tx throws(VaultError) in
            let current = try engine.find(query, in: groups, underWriteLock: true).first
            let found = current?.record.generation ?? 0
            guard found == expected else {
                let now = found == 0 ? "there is no such item" : "version \(found) is current"
                throw VaultError(
                    .duplicateItem,
                    "\(key) was changed by another writer: \(now), not \(expected == 0 ? "none" : "version \(expected)"); "
                        + "read it again and retry; nothing was written")
            }
            if let current {
                return try engine.update([current], with: ItemChanges(data: data), client: client, in: tx)
                    .first?.record.generation ?? found + 1
            }
            return try engine.add(
                .genericPassword, attributes: key.attributes(accessibility: accessibility), data: data,
                group: target, in: tx
            ).record.generation
        }
    }

    // MARK: Helpers

    /// The group and id of `key`'s item: in the first group a get of it searches where it has a file
    /// or a kept version.
    private func historyLocation(_ key: ItemKey) throws(VaultError) -> (AccessGroup, ItemID) {
        let query = key.query
        guard let primaryKey = query.fullPrimaryKey else { throw notFound(query) }
        for group in try searchGroups(query) {
            let id: ItemID
            do {
                id = try engine.itemID(group, primaryKey)
            } catch  where key.group == nil && error.isMissingGroup {
                continue
            }
            let present = try translatingStoreErrors { () throws(StoreError) in
                try engine.store.fingerprint(group: group.name, id: id) != nil
            }
            if present { return (group, id) }
            if try !keptGenerations(group, id).isEmpty { return (group, id) }
        }
        throw notFound(query)
    }

    private func keptGenerations(_ group: AccessGroup, _ id: ItemID) throws(VaultError) -> [UInt64] {
        try translatingStoreErrors { () throws(StoreError) in
            try engine.store.versionGenerations(of: ItemLocation(group: group.name, id: id))
        }
    }

    private func version(_ generation: UInt64, _ group: AccessGroup, _ id: ItemID) throws(VaultError) -> ItemRecord? {
        try engine.store.readVersion(ItemLocation(group: group.name, id: id), generation: generation) {
            (bytes, path) throws(VaultError) in try engine.decode(bytes, path: path)
        }
    }

    private static func info(_ record: ItemRecord, isCurrent: Bool) -> ItemVersionInfo {
        ItemVersionInfo(
            number: record.generation, date: record.modified, writerID: record.writer, client: record.client,
            isDeletion: record.isDeletion, isCurrent: isCurrent)
    }
}

extension Vault {
    /// Sets how many previous versions of each item the vault keeps (0: none; nil: the default, 10),
    /// the vault's owner only; versions past the new bound are removed at once. Other open handles keep
    /// the bound they read until they open the vault again.
    public func setVersionsKept(_ count: Int?) throws(VaultError) {
        try translatingStoreErrors { () throws(StoreError) in try engine.store.setVersionsKept(count) }
    }

    /// The most versions of each item a vault can keep.
    public static let maximumVersionsKept = VaultStore.maximumVersionsKept
}
