import FoundationEssentials
import VaultStore

/// `Vault.set` with group commit (`PreparedItemWrite`): the item is read and its next file written and
/// flushed before the write lock, and the transaction publishes it only if the item is still the one
/// read; otherwise it writes as usual.
extension ItemEngine {
    /// A `set` made ready outside the lock.
    struct PreparedSet {
        let write: PreparedItemWrite
        /// The secret it stores.
        let data: Data
        /// The item it was made from: its id and version (nil: there was none, and it adds one).
        let id: ItemID
        let basis: ItemVersion?
        /// The generation it writes: of a new item, the one after a deleted item's of the name, which
        /// another writer's add and delete may change before the lock.
        let generation: UInt64

        /// Whether `current`, the item as read under the lock, is the one this write was made from.
        func wasMade(from current: LocatedItem?) -> Bool {
            guard let current else { return basis == nil }
            return current.id == id && current.record.version == basis
        }
    }

    /// Reads the generic password `key` in `group` as a get does, without the lock, and prepares the
    /// write that a `set` of `data` makes of it (the update of its secret, or the add of a new item with
    /// `accessibility`), as `update` and `add` would build it. Nil when no prepared write can be made
    /// (a fleet group, a locked class, anything that fails): the caller then writes under
    /// the lock as usual, and reports what is wrong there.
    func prepareSet(_ data: Data, for key: ItemKey, accessibility: Accessibility, in group: AccessGroup)
        -> PreparedSet?
    {
        guard !store.isFleetGroup(group.name),
            let found = try? find(key.query, in: [group], writing: true), found.count <= 1
        else { return nil }
        let now = ItemRecord.now()
        var record: ItemRecord
        let id: ItemID
        if let current = found.first {
            record = current.record
            record.data = data
            record.advance(modifiedAt: now)
            id = current.id
        } else {
            let attributes = key.attributes(accessibility: accessibility)
            guard store.isAvailable(attributes.accessible.protectionClass, in: group.name),
                let added = try? ItemRecord.added(.genericPassword, attributes: attributes, data: data, at: now),
                let itemID = try? itemID(group, added.primaryKey, writing: true)
            else { return nil }
            guard let first = try? firstGeneration(group, itemID) else { return nil }
            (record, id) = (added, itemID)
            record.generation = first
        }
        let location = ItemLocation(group: group.name, id: id)
        let prepared = try? encoded(record, group: group) { bytes in
            store.prepareWrite(bytes, to: location, protectionClass: record.protectionClass, version: record.version)
        }
        guard let write = prepared ?? nil else { return nil }
        return PreparedSet(
            write: write, data: data, id: id, basis: found.first?.record.version, generation: record.generation)
    }
}
