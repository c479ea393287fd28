import FoundationEssentials
import VaultArchive
import VaultCrypto
import VaultStore
import VaultSystem

/// An item found in the store: where it is and what it holds.
struct LocatedItem: Sendable {
    let group: AccessGroup
    let id: ItemID
    let record: ItemRecord

    var location: ItemLocation { ItemLocation(group: group.name, id: id) }

    var persistentReference: PersistentReference {
        PersistentReference(group: group, persistentID: record.persistentID, itemID: id)
    }

    /// The result for a query returning `options`. A result that returns no secret keeps none.
    func matched(returning options: ReturnOptions) -> MatchedItem {
        guard options.contains(.data) || record.data.isEmpty else {
            return MatchedItem(LocatedItem(group: group, id: id, record: record.with(data: Data())), returning: options)
        }
        return MatchedItem(self, returning: options)
    }
}

/// The internal SecItem layer (as Valet keeps one under its API): item records in and out of the
/// store, the look-up strategy (one file per group for a full primary key, a scan otherwise), and the
/// write rules (duplicates, moves, generations). Every mutation runs under the store's write lock.
struct ItemEngine: Sendable {
    let store: VaultStore
    /// Decoded metadata of the items this handle has read or written (see `ItemRecordCodec.decode`).
    let metadataCache: BoundedCache<ItemRecordCodec.MetadataBytes, ItemRecord>
    /// The attributes (never the secret) of the items this handle has scanned, each with the
    /// fingerprint of the file it came from: a query that returns no secrets re-reads only the files
    /// whose fingerprint changed (a readlink and a stat instead of a read and a decryption). Files
    /// changed in the current clock tick are not cached (`ItemFingerprint.isSettled`).
    let attributeCache: BoundedCache<Key, CachedAttributes>
    /// Item ids by group and primary key (a keyed hash each, fixed for a handle's keys).
    let itemIDCache: BoundedCache<PrimaryKeyInGroup, ItemID>

    /// The byte bounds of a handle's caches (docs/PERFORMANCE.md, "What made reads fast"): 2 MiB of
    /// decoded metadata (some 3,000 items of a few short attributes), 512 KiB of item ids (some
    /// 2,000), and 64 MiB of scanned attributes (some 135,000 such items at about 500 bytes each, so
    /// that a query of every item of a 100,000-item vault is answered from the cache).
    struct CacheBounds: Sendable {
        var metadataBytes = 2 << 20
        var itemIDBytes = 512 << 10
        var attributeBytes = 64 << 20
    }

    /// Who writes through this engine (`ItemEngine+Author.swift`).
    let author: Author

    init(store: VaultStore, author: Author, cacheBounds: CacheBounds = CacheBounds()) {
        self.store = store
        self.author = author
        metadataCache = ItemRecordCodec.metadataCache(byteCapacity: cacheBounds.metadataBytes)
        // Kept clean by the scans (`forgetUnlisted`), not emptied when full: a query of more items
        // than fit keeps its hits on every pass.
        attributeCache = BoundedCache(byteCapacity: cacheBounds.attributeBytes, emptiesWhenRefusing: false) {
            key, entry in
            HeapBytes.of(key.id.fileName) + entry.heapByteEstimate
        }
        itemIDCache = BoundedCache(byteCapacity: cacheBounds.itemIDBytes) { key, id in
            HeapBytes.of(key.primaryKey) + HeapBytes.of(key.group.rawValue) + HeapBytes.of(id.fileName)
        }
    }

    /// An attribute cache entry: the record without its secret, and the fingerprint of its file. An
    /// object, so that the cache's dictionary holds one reference per bucket: a dictionary of 100,000
    /// entries has 262,144 buckets, and 128 bytes inline in each was 34 MB.
    final class CachedAttributes: Sendable {
        let fingerprint: ItemFingerprint
        let record: ItemRecord

        init(fingerprint: ItemFingerprint, record: ItemRecord) {
            self.fingerprint = fingerprint
            self.record = record
        }

        /// The entry's object and what it owns beyond it.
        var heapByteEstimate: Int {
            HeapBytes.object(MemoryLayout<ItemFingerprint>.stride + MemoryLayout<ItemRecord>.stride)
                + HeapBytes.of(fingerprint.recordText) + record.heapByteEstimate
        }
    }

    struct PrimaryKeyInGroup: Hashable, Sendable {
        let group: AccessGroup
        let primaryKey: [UInt8]

        func hash(into hasher: inout Hasher) {
            hasher.combine(group)
            FoldedHash.combine(primaryKey.span, into: &hasher)
        }
    }

    // MARK: Records

    func describe(_ itemClass: ItemClass, _ a: ItemAttributes, group: AccessGroup) -> String {
        switch itemClass {
        case .genericPassword:
            return "generic password (service \"\(a.service ?? "")\", account \"\(a.account ?? "")\") in group \(group)"
        case .internetPassword:
            return "internet password (server \"\(a.server ?? "")\", account \"\(a.account ?? "")\") in group \(group)"
        }
    }

    /// The id of the item with `primaryKey` in `group`, from the cache when it holds it; `writing` for
    /// an id that a write computes (a provisional entry, see `BoundedCache`).
    func itemID(_ group: AccessGroup, _ primaryKey: [UInt8], writing: Bool = false) throws(VaultError) -> ItemID {
        let key = PrimaryKeyInGroup(group: group, primaryKey: primaryKey)
        if let id = itemIDCache[key] { return id }
        let id = try translatingStoreErrors { () throws(StoreError) in
            try store.itemID(group: group.name, primaryKey: primaryKey)
        }
        itemIDCache.insert(id, for: key, provisional: writing)
        return id
    }

    func filePath(_ group: AccessGroup, _ id: ItemID) -> String {
        store.path(of: ItemLocation(group: group.name, id: id))
    }

    /// Reads and decodes the file of one record, as it is; nil when the file does not exist. An item
    /// file replaced with an older copy of itself is an error (the store checks it against its
    /// generation record).
    func load(_ group: AccessGroup, _ id: ItemID) throws(VaultError) -> ItemRecord? {
        try store.readFile(ItemLocation(group: group.name, id: id), decoding: decode)
    }

    /// Like `load`, but nil also when the file is the old half of a move that has not finished (a
    /// writer crashed, or is still running, between writing the new file and removing this one): the
    /// store hides it.
    func loadCurrent(_ group: AccessGroup, _ id: ItemID) throws(VaultError) -> ItemRecord? {
        try store.read(ItemLocation(group: group.name, id: id), decoding: decode)
    }

    /// Refuses (`decode`, damage) a record whose primary key is not the one its file's name was made
    /// from: authentication binds the file to its name, so only a writer with the group's key (a
    /// member of a shared group, a buggy writer) makes one, and read as it claims to be, it would hide
    /// the item its name stands for. `check` reports the same words.
    func requireNamedByItsFile(_ record: ItemRecord, group: AccessGroup, id: ItemID) throws(VaultError) {
        guard try itemID(group, record.primaryKey) != id else { return }
        throw VaultError(.decode, "\(filePath(group, id)): \(Self.misnamedRecord)")
    }

    /// What a record stored under another item's name is called, wherever it is met.
    static let misnamedRecord = "the item's primary key does not match its file name"

    func decode(_ bytes: [UInt8], path: () -> String) throws(VaultError) -> ItemRecord {
        do {
            return try ItemRecordCodec.decode(bytes, cache: metadataCache)
        } catch {
            throw VaultError(.decode, "\(path()) decrypted but is not a valid item record: \(error)", cause: error)
        }
    }

    /// The plaintext of `record`, for `body` only (it is wiped afterwards).
    func encoded<R>(_ record: ItemRecord, group: AccessGroup, _ body: ([UInt8]) throws(VaultError) -> R)
        throws(VaultError) -> R
    {
        try requireAllowedInGroup(record, group)
        var record = record
        // Who wrote it, for the history. Not in a fleet group, which keeps none: its items travel to
        // machines that may run an earlier build, which reads no record carrying these fields.
        if !store.isFleetGroup(group.name) {
            record.client = author.client
            record.writer = author.userID
        } else {
            record.client = nil
            record.writer = nil
        }
        var bytes: [UInt8]
        do {
            bytes = try ItemRecordCodec.encode(record, cache: metadataCache)
        } catch {
            let reason = (error as? EncodingError)?.redactedDescription ?? "\(error)"
            throw VaultError(
                .param, "cannot encode \(describe(record.itemClass, record.attributes, group: group)): \(reason)")
        }
        defer { bytes.wipe() }
        return try body(bytes)
    }

    func save(_ record: ItemRecord, group: AccessGroup, id: ItemID, in tx: WriteTransaction) throws(VaultError) {
        try encoded(record, group: group) { (bytes) throws(VaultError) in
            try translatingStoreErrors { () throws(StoreError) in
                try tx.write(
                    bytes, to: ItemLocation(group: group.name, id: id), protectionClass: record.protectionClass,
                    version: record.version)
            }
        }
    }

    // MARK: Finding

    /// An item file that could not be read or failed authentication or decoding.
    struct DamagedFile: Sendable {
        let group: AccessGroup
        /// The item file's id; nil when the group itself could not be read (its key).
        let id: ItemID?
        let path: String
        let error: VaultError
    }

    /// Every item of `groups` that `query` matches (the limit is the caller's business), in a stable
    /// order: by group as listed, then creation date, then id. A damaged file is skipped in a scan, but
    /// if nothing matched and a file was damaged, the damage is the answer: "not found" is said only
    /// when every candidate could be read. A file whose class key the vault lacks (locked) makes the
    /// whole query "locked" (`interactionNotAllowed`), never "not found", unless the query's
    /// accessibility filter names a class that is unlocked (then locked files cannot match).
    /// `underWriteLock`: the caller holds the vault's write lock, so no move can be half done (crashed
    /// ones were finished when the lock was taken) and the check for one is skipped.
    /// `needsData: false` (a query that returns no secrets) lets a scan use the attribute cache.
    func find(
        _ query: Query, in groups: [AccessGroup], underWriteLock: Bool = false, needsData: Bool = true,
        writing: Bool = false
    ) throws(VaultError) -> [LocatedItem] {
        let found = try find(
            query, in: groups, underWriteLock: underWriteLock, needsData: needsData, settingDamageAside: false,
            writing: writing)
        if found.items.isEmpty, let damage = found.damaged.first { throw damage.error }
        return found.items
    }

    /// Like `find`, but with the damaged files met on the way. `settingDamageAside`: a damaged file
    /// named by a full primary key is set aside too (otherwise it is thrown at once, as `find` does);
    /// the files of scans are always set aside, all of them, in group order. Locked files are handled
    /// as in `find`: they are not damage. The id of a full primary key goes into the cache provisionally
    /// for a write's look-up (`writing`, or `underWriteLock`).
    func find(
        _ query: Query, in groups: [AccessGroup], underWriteLock: Bool, needsData: Bool, settingDamageAside: Bool,
        writing: Bool = false
    ) throws(VaultError) -> (items: [LocatedItem], damaged: [DamagedFile]) {
        let lockedFilesCannotMatch = query.attributes.accessible.map { store.isAvailable($0.protectionClass) } ?? false
        if let reference = query.persistentReference {
            guard groups.contains(reference.group) else { return ([], []) }
            return try findByReference(reference, query: query, lockedFilesCannotMatch: lockedFilesCannotMatch)
        }
        var found: [LocatedItem] = []
        var damaged: [DamagedFile] = []
        if let primaryKey = query.fullPrimaryKey {
            // Searching several groups, one that cannot be read (its key damaged by a member, say) is set
            // aside, as a scan does, and thrown only when no other group holds the item.
            let severalGroups = query.attributes.accessGroup == nil && groups.count > 1
            let asideToo = settingDamageAside || severalGroups
            for group in groups {
                let id: ItemID
                do {
                    id = try itemID(group, primaryKey, writing: writing || underWriteLock)
                } catch  where query.attributes.accessGroup == nil && error.isMissingGroup {
                    // A member of shared groups searching all its client's groups: one that the vault
                    // does not have (its application identifier, say) holds nothing, as in a scan.
                    continue
                } catch  where severalGroups && error.status != .interactionNotAllowed {
                    let path = (error.cause as? StoreError)?.path ?? store.path(of: group.name)
                    damaged.append(DamagedFile(group: group, id: nil, path: path, error: error))
                    continue
                }
                let record: ItemRecord?
                do {
                    record = try underWriteLock ? load(group, id) : loadCurrent(group, id)
                } catch  where error.status == .interactionNotAllowed && lockedFilesCannotMatch {
                    continue
                } catch  where error.status != .interactionNotAllowed && asideToo {
                    damaged.append(DamagedFile(group: group, id: id, path: filePath(group, id), error: error))
                    continue
                }
                guard let record else { continue }
                if query.matches(record, group: group) {
                    found.append(LocatedItem(group: group, id: id, record: record))
                } else if record.primaryKey != primaryKey {
                    // The file of this key holds another item's record: damage, not "not found".
                    let error = VaultError(.decode, "\(filePath(group, id)): \(Self.misnamedRecord)")
                    guard settingDamageAside else { throw error }
                    damaged.append(DamagedFile(group: group, id: id, path: filePath(group, id), error: error))
                }
            }
            return (found, damaged)
        }
        for group in groups {
            let scanned = try scan(group, cached: !needsData) { record in query.matches(record, group: group) }
            if let locked = scanned.locked, !lockedFilesCannotMatch { throw locked }
            if found.isEmpty { found = scanned.items } else { found += scanned.items }
            damaged += scanned.damaged
        }
        return (found, damaged)
    }

    private func findByReference(_ reference: PersistentReference, query: Query, lockedFilesCannotMatch: Bool)
        throws(VaultError) -> (items: [LocatedItem], damaged: [DamagedFile])
    {
        // Fast path: the item still has the primary key it had when the reference was made.
        do {
            if let record = try loadCurrent(reference.group, reference.itemIDHint),
                record.persistentID == reference.persistentID
            {
                guard query.matches(record, group: reference.group) else { return ([], []) }
                return ([LocatedItem(group: reference.group, id: reference.itemIDHint, record: record)], [])
            }
        } catch  where error.status == .interactionNotAllowed && !lockedFilesCannotMatch {
            throw error
        } catch {
            // Damaged or locked-and-irrelevant: look further (the scan meets a damaged file again).
        }
        let scanned = try scan(reference.group) { record in
            record.persistentID == reference.persistentID && query.matches(record, group: reference.group)
        }
        if scanned.items.isEmpty, let locked = scanned.locked, !lockedFilesCannotMatch { throw locked }
        return (scanned.items, scanned.damaged)
    }

    /// Drops the cached attributes of `group`'s items that are not in `listed` (a full listing of the
    /// group): items deleted or moved away, whose entries would otherwise hold the cache's room.
    func forgetUnlisted(in group: AccessGroup, listed: [ItemID]) {
        let ids = Set(listed)
        attributeCache.removeAll { $0.group == group && !ids.contains($0.id) }
    }

    /// An item of a group: the key of the attribute cache, and of an update's plan.
    struct Key: Hashable, Sendable {
        let group: AccessGroup
        let id: ItemID
    }
}
