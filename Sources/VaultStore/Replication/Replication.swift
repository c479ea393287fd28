import VaultCrypto

/// Replication of some groups' items to other machines, as the store sees it: handed to `open` by the
/// layer that opens a vault (the store links no network client and knows no replica). The store asks
/// it only for the groups whose `group.key` marks them replicated (the fleet flag, docs/FORMAT.md); a
/// vault without such groups never calls it.
package protocol Replication: AnyObject, Sendable {
    /// The replica of replicated group `group`, asked once per group by each store that touches it.
    func replica(of group: GroupName, cache: ReplicaCache) throws(StoreError) -> any GroupReplica
}

/// One replicated group's replica, as the store uses it around its reads and writes. The group's
/// directory is the replica's cache; the store hands each call the `ReplicaCache` it may change (never
/// kept: the cache holds the store).
package protocol GroupReplica: AnyObject, Sendable {
    /// What the replica is, for messages ("etcd").
    var name: String { get }
    /// Before a read of the group outside a transaction: brings the cache up to date as far as the
    /// replica's policy wants (it takes the group's lock through `cache.withGroupLock` to change it).
    func prepareRead(_ cache: ReplicaCache) throws(StoreError)
    /// In a transaction that holds the group's lock, at its first touch of the group: brings the cache
    /// up to date. Returns whether the cache changed (what the transaction read before may be stale).
    func refreshInTransaction(_ cache: ReplicaCache) throws(StoreError) -> Bool
    /// Stores item `id`'s sealed file `contents` in the replica, before the store writes its own copy,
    /// with what `history` keeps and prunes of its versions; `conflict` when the replica changed since
    /// the cache was brought up to date (the store then runs the transaction again).
    func write(_ id: ItemID, contents: [UInt8], history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError)
    /// Removes item `id` from the replica, before the store removes its own copy, with what `history`
    /// keeps (its last file and tombstone) and prunes; `conflict` as `write`.
    func delete(_ id: ItemID, history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError)
    /// The generations of item `id`'s kept versions in the replica, oldest first. Versions are not
    /// cached: each machine reads them from the replica.
    func versionGenerations(of id: ItemID) throws(StoreError) -> [UInt64]
    /// Item `id`'s sealed file at version `generation`, and where the replica keeps it (for messages);
    /// nil when it keeps no such version.
    func version(of id: ItemID, generation: UInt64) throws(StoreError) -> (contents: [UInt8], place: String)?
    /// Removes every kept version of item `id` (`vault rm --purge`).
    func purgeVersions(of id: ItemID) throws(StoreError)
    /// The store's copy of a change the replica took could not be written: the cache may not match what
    /// the replica last saw, and the next read must bring it up to date.
    func forgetCache()
    /// A transaction that touched the group ended, every write's local half done: the cache is what the
    /// replica last saw (called under the group's lock).
    func transactionEnded(_ cache: ReplicaCache)
}

/// What a replica write does to the history of the item it changes (`ItemHistory`, kept by the
/// replica as the store keeps a local group's): the item's file it replaces, kept as the version
/// before; a delete's tombstone, kept at the delete's generation; and the oldest generation still kept
/// (older versions go in the same write; 0: none go).
package struct ReplicaHistoryStep: Sendable, Equatable {
    /// One kept version: the item's sealed file at `generation`.
    package struct Version: Sendable, Equatable {
        package let generation: UInt64
        package let contents: [UInt8]
    }
    /// What the item's file was before this write: it never changes once written, so a replica may
    /// store it ahead of the write.
    package let previous: Version?
    /// A delete's record of the deletion: only with the delete.
    package let tombstone: Version?
    package let oldestKept: UInt64

    /// The step of a write (or delete) that makes generation `generation`, keeping `kept` versions
    /// before it (`versionsKept`): `previous`, the item's current file, becomes version `generation - 1`
    /// and `tombstone` (a delete's) version `generation`. Nil for a first generation, or when the vault
    /// keeps no history (as in a local group, the versions kept before stay until a purge).
    init?(writing generation: UInt64, versionsKept kept: Int, previous: [UInt8]?, tombstone: [UInt8]? = nil) {
        guard generation > 1, kept > 0 else { return nil }
        self.previous = previous.map { Version(generation: generation - 1, contents: $0) }
        self.tombstone = tombstone.map { Version(generation: generation, contents: $0) }
        oldestKept = generation > UInt64(kept) ? generation - UInt64(kept) : 0
    }
}

/// A replicated group's key as the replication needs it: its id (the same on every machine) and its
/// index key, from which the replication derives keys of its own (a manifest's, a registration's
/// check value). Made new, or read from a key file that another machine exported.
package struct ReplicatedGroupKey: Sendable {
    let file: GroupKeyFile

    /// The group's 16-byte id.
    package var groupID: [UInt8] { file.groupID }
    /// The group's index key, which rotations keep (item ids do not change).
    package var indexKey: SymmetricKey { file.secrets.indexKey }
    /// The generation of the key that new items are sealed under, and that key.
    package var generation: UInt32 { file.secrets.currentGeneration }
    package var generationKey: SymmetricKey { file.secrets.key(generation: generation)! }

    init(file: GroupKeyFile) {
        self.file = file
    }

    /// A new group's key: a random id and random secrets.
    package static func random() throws(StoreError) -> ReplicatedGroupKey {
        let groupID: [UInt8]
        do {
            groupID = try SecureRandom.bytes(count: GroupKeyFile.groupIDByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a group id")
        }
        return ReplicatedGroupKey(
            file: GroupKeyFile(groupID: groupID, isShared: false, secrets: try GroupSecrets.random(), isFleet: true))
    }

    /// The key in `exported`, a file that `VaultStore.exportReplicatedGroupKey` wrote for group `group`.
    package init(exported: [UInt8], group: GroupName) throws(StoreError) {
        let given = try GroupKeyFile.decodeAsMember(exported, group: group, vaultID: [], path: "the key file")
        guard given.isFleet else {
            throw StoreError(.invalidName, "the key file is not a fleet group's key (exported for group \(group)?)")
        }
        file = GroupKeyFile(groupID: given.groupID, isShared: false, secrets: given.secrets, isFleet: true)
    }
}
