import VaultCrypto
import VaultStore

/// How a vault reaches the replica of its fleet groups: given to `Vault.open` and `Vault.create`.
/// `VaultFleet` makes one (`FleetClient.etcd()`); a vault opened without one refuses its fleet groups
/// and runs no fleet code.
public struct FleetClient: Sendable {
    /// Makes the engine of one open vault (its fleet groups' state lives as long as the vault).
    let makeEngine: @Sendable () -> any FleetEngine

    /// A client whose engines `makeEngine` makes.
    package init(makeEngine: @escaping @Sendable () -> any FleetEngine) {
        self.makeEngine = makeEngine
    }
}

/// What `Vault`'s fleet operations ask of the replication engine, besides what the store asks of it.
/// One engine per open vault; it never keeps the store (the store keeps it).
package protocol FleetEngine: Replication {
    /// Makes fleet group `group` in `store`: a new key, registered with the replica `settings` names.
    func createGroup(_ group: GroupName, settings: FleetSettings, unixGroup: UInt32?, in store: VaultStore)
        throws(StoreError)
    /// Joins fleet group `group` with the key another machine exported, checked against the
    /// registration, then fills it from the replica.
    func joinGroup(
        _ group: GroupName, key: ReplicatedGroupKey, settings: FleetSettings, unixGroup: UInt32?, in store: VaultStore
    ) throws(StoreError)
    /// Reads fleet group `group` from its replica anew (accepting a rollback when asked).
    func resync(_ group: GroupName, acceptingRollback: Bool, in store: VaultStore) throws(StoreError) -> FleetResync
    /// How the last read of fleet group `group` was answered; nil when it was not read yet.
    func cacheStatus(of group: GroupName, in store: VaultStore) -> FleetCacheStatus?
    /// Whether every read must be confirmed by the replica (never answered from the cache alone).
    func requireFreshReads(_ required: Bool)
    /// Removes fleet group `group` from its replica (its items, versions and registration), leaving a
    /// record that says who removed it, for the other machines; the number of items it held there.
    func removeFromReplica(_ group: GroupName, in store: VaultStore) throws(StoreError) -> Int
    /// Rotates fleet group `group`'s key online, leaving out the machines `revoking` names (ids or
    /// host names): they keep the key they had, which opens nothing written afterwards.
    func rotate(_ group: GroupName, revoking: [String], in store: VaultStore) throws(StoreError) -> FleetRotation
    /// The machines registered for fleet group `group` in its replica.
    func machines(of group: GroupName, in store: VaultStore) throws(StoreError) -> [FleetMachine]
}
