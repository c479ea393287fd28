import FoundationEssentials
import VaultStore
import VaultSystem

/// Scans: every item of a group, decrypted.
extension ItemEngine {
    /// What `scan` found in a group.
    struct ScanResult {
        /// The items `include` accepted.
        var items: [LocatedItem]
        /// Every file that failed, but locked ones.
        var damaged: [DamagedFile]
        /// The first locked file's error.
        var locked: VaultError?

        /// The first damaged file's error.
        var damage: VaultError? { damaged.first?.error }
    }

    /// Decrypts every item of `group` and keeps those `include` accepts. Of two files with one
    /// persistent id (a crash in the middle of a move), the higher generation wins. Files that fail are
    /// set aside: every damaged one and the first locked one are returned with the items.
    func scan(_ group: AccessGroup, cached: Bool = false, include: (ItemRecord) -> Bool) throws(VaultError)
        -> ScanResult
    {
        // A fleet group is checked against its replica once, for the whole scan.
        let scanned = try translatingStoreErrors { () throws(StoreError) in
            try store.scanning(group.name) { () throws(VaultError) in
                try scanChecked(group, cached: cached, include: include)
            }
        }
        return try scanned.get()
    }

    /// `scan`, its group's replica checked.
    private func scanChecked(_ group: AccessGroup, cached: Bool, include: (ItemRecord) -> Bool) throws(VaultError)
        -> ScanResult
    {
        let ids = try translatingStoreErrors { () throws(StoreError) in try store.itemIDs(in: group.name, sorted: false)
        }
        // The items in an array, and by persistent id only their index: a scan of 100,000 items
        // holds each once (a dictionary of whole items was the peak of a full query's memory).
        var items: [LocatedItem] = []
        items.reserveCapacity(ids.count)
        var indexByPersistentID: [Data: Int] = [:]
        indexByPersistentID.reserveCapacity(ids.count)
        var damaged: [DamagedFile] = []
        var locked: VaultError?
        let now = FileTimestampClock.now()
        for id in ids {
            let record: ItemRecord
            do {
                if cached {
                    let key = Key(group: group, id: id)
                    // The fingerprint is taken before the read: a file replaced in between is only a
                    // miss next time, never a stale hit.
                    guard
                        let fingerprint = try translatingStoreErrors({ () throws(StoreError) in
                            try store.fingerprint(group: group.name, id: id)
                        })
                    else { continue }
                    if let hit = attributeCache[key], hit.fingerprint == fingerprint {
                        record = hit.record
                    } else {
                        guard let loaded = try load(group, id) else { continue }
                        try requireNamedByItsFile(loaded, group: group, id: id)
                        // The caller wants no secret: none is kept, in the cache or in what is found.
                        record = loaded.with(data: Data())
                        if fingerprint.isSettled(now: now) {
                            attributeCache.insert(CachedAttributes(fingerprint: fingerprint, record: record), for: key)
                        }
                    }
                } else {
                    guard let loaded = try load(group, id) else { continue }  // removed meanwhile
                    try requireNamedByItsFile(loaded, group: group, id: id)
                    record = loaded
                }
            } catch  where error.status == .interactionNotAllowed {
                locked = locked ?? error
                continue
            } catch {
                damaged.append(DamagedFile(group: group, id: id, path: filePath(group, id), error: error))
                continue
            }
            guard include(record) else { continue }
            let item = LocatedItem(group: group, id: id, record: record)
            if let index = indexByPersistentID[record.persistentID] {
                if items[index].record.generation < record.generation { items[index] = item }
                continue
            }
            indexByPersistentID[record.persistentID] = items.count
            items.append(item)
        }
        indexByPersistentID = [:]
        if cached { forgetUnlisted(in: group, listed: ids) }
        items.sort { ($0.record.created, $0.id) < ($1.record.created, $1.id) }
        return ScanResult(items: items, damaged: damaged, locked: locked)
    }
}
