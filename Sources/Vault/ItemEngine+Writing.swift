import FoundationEssentials
import VaultStore

/// `ItemEngine`'s writes: adds, updates and deletes of located items. Call them under the write lock,
/// inside the transaction they are given.
extension ItemEngine {
    /// Adds a new item; a duplicate primary key leaves the stored item untouched.
    func add(
        _ itemClass: ItemClass, attributes: ItemAttributes, data: Data, group: AccessGroup, in tx: WriteTransaction
    ) throws(VaultError) -> LocatedItem {
        var stored = attributes
        stored.accessGroup = nil
        stored.creationDate = nil
        stored.modificationDate = nil
        try stored.requireTextWithinLimits()
        let id = try itemID(group, ItemRecord.primaryKey(itemClass, stored), writing: true)
        let protectionClass = stored.accessible.protectionClass
        guard store.isAvailable(protectionClass, in: group.name) else {
            throw VaultError(
                .interactionNotAllowed,
                "cannot add \(describe(itemClass, stored, group: group)) with class \(protectionClass): the vault "
                    + "at \(store.path) is locked for it; run `vault unlock`")
        }
        do throws(VaultError) {
            if let existing = try loadCurrent(group, id) {
                try requireNamedByItsFile(existing, group: group, id: id)
                throw VaultError(.duplicateItem, "\(describe(itemClass, stored, group: group)) already exists")
            }
        } catch  where error.status == .interactionNotAllowed {
            // An item is there, even if this process cannot read it.
            throw VaultError(.duplicateItem, "\(describe(itemClass, stored, group: group)) already exists")
        } catch {
            throw error
        }
        var record = try ItemRecord.added(itemClass, attributes: stored, data: data, at: ItemRecord.now())
        record.generation = try firstGeneration(group, id)
        try save(record, group: group, id: id, in: tx)
        return LocatedItem(group: group, id: id, record: record)
    }

    /// Applies `changes` to every item in `matches`. Every new primary key is checked before anything
    /// is written: a move onto an existing item's key is a duplicate and nothing changes.
    func update(_ matches: [LocatedItem], with changes: ItemChanges, client: Client, in tx: WriteTransaction)
        throws(VaultError) -> [LocatedItem]
    {
        if let target = changes.attributes.accessGroup { try client.entitle(target) }
        let now = ItemRecord.now()
        var planned: [(old: LocatedItem, new: LocatedItem)] = []
        for match in matches {
            var record = match.record
            var changed = changes.attributes
            changed.accessGroup = nil
            record.attributes = record.attributes.applying(changed)
            try record.attributes.requireTextWithinLimits()
            if let data = changes.data { record.data = data }
            record.advance(modifiedAt: now)
            let group = changes.attributes.accessGroup ?? match.group
            let id = try itemID(group, record.primaryKey, writing: true)
            if group != match.group || id != match.id {
                // A move onto the name of a deleted item carries on that item's numbering.
                record.generation = max(record.generation, try firstGeneration(group, id))
            }
            planned.append((match, LocatedItem(group: group, id: id, record: record)))
        }
        let oldKeys = Set(planned.map { Key(group: $0.old.group, id: $0.old.id) })
        var newKeys = Set<Key>()
        for (old, new) in planned {
            let key = Key(group: new.group, id: new.id)
            // Made only for a message: every update comes here.
            func description() -> String { describe(new.record.itemClass, new.record.attributes, group: new.group) }
            guard newKeys.insert(key).inserted else {
                throw VaultError(.duplicateItem, "the update would give two items the key of \(description())")
            }
            if key != Key(group: old.group, id: old.id), !oldKeys.contains(key),
                try loadCurrent(new.group, new.id) != nil
            {
                throw VaultError(.duplicateItem, "\(description()) already exists; nothing was updated")
            }
        }
        for (old, new) in planned {
            guard old.group != new.group || old.id != new.id else {
                try save(new.record, group: new.group, id: new.id, in: tx)
                continue
            }
            try encoded(new.record, group: new.group) { (bytes) throws(VaultError) in
                try translatingStoreErrors { () throws(StoreError) in
                    try tx.move(
                        old.location, to: new.location, plaintext: bytes, protectionClass: new.record.protectionClass,
                        version: new.record.version, sourceGeneration: old.record.generation,
                        keepingSource: newKeys.contains(Key(group: old.group, id: old.id)))
                }
            }
        }
        return planned.map(\.new)
    }

    /// Removes every item in `matches`, each leaving a tombstone in its history (`ItemHistory`): its
    /// record without the secret, at the next generation, marked as a deletion.
    func delete(_ matches: [LocatedItem], in tx: WriteTransaction) throws(VaultError) {
        let now = ItemRecord.now()
        for match in matches {
            var tombstone = match.record.with(data: Data())
            tombstone.advance(modifiedAt: now)
            tombstone.isDeletion = true
            try encoded(tombstone, group: match.group) { (bytes) throws(VaultError) in
                _ = try translatingStoreErrors { () throws(StoreError) in
                    try tx.delete(
                        match.location, leaving: bytes, protectionClass: tombstone.protectionClass,
                        version: tombstone.version)
                }
            }
        }
    }

    /// The generation a new item `id` of `group` starts at: 1, or the one after a deleted item's of the
    /// same name, so that the versions in its history keep one numbering.
    func firstGeneration(_ group: AccessGroup, _ id: ItemID) throws(VaultError) -> UInt64 {
        let deleted = try translatingStoreErrors { () throws(StoreError) in
            try store.deletedGeneration(of: ItemLocation(group: group.name, id: id))
        }
        // Bounded by the store (below 2^62), so the next one cannot overflow.
        return (deleted ?? 0) + 1
    }
}
