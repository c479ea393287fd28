import VaultCrypto
import VaultStore

/// Fleet groups: an access group whose items every machine that joined it shares through etcd. The
/// vault must be opened with a fleet client (`FleetClient.etcd()` of `VaultFleet`); without one these
/// refuse with `notAvailable`.
extension Vault {
    /// The engine of this vault's fleet client, or the refusal of a vault opened without one.
    func fleetEngine() throws(VaultError) -> any FleetEngine {
        guard let engine = engine.store.replication as? any FleetEngine else {
            throw VaultError(
                .notAvailable,
                "the vault at \(path) was opened without a fleet client, and fleet groups need one: open it with "
                    + "`fleet: .etcd()` (VaultFleet)")
        }
        return engine
    }

    /// Whether this handle can use fleet groups (it was opened with a fleet client).
    public var hasFleetSupport: Bool { engine.store.replication is any FleetEngine }

    /// Makes fleet group `group` (the vault's owner): a new key, registered in the etcd
    /// cluster `settings` names (its id and a check value, never the key). Private to the owner, or
    /// with `unixGroup` (a gid) shared on this machine with that Unix group's members, as
    /// `createGroup(_:unixGroup:)` shares a group. Refuses (`duplicateItem`) a group that exists here or
    /// an id etcd has.
    public func createFleetGroup(_ group: AccessGroup, settings: FleetSettings, unixGroup: UInt32? = nil)
        throws(VaultError)
    {
        let fleet = try fleetEngine()
        do throws(StoreError) {
            try fleet.createGroup(group.name, settings: settings, unixGroup: unixGroup, in: engine.store)
        } catch  where error.code == .vaultAlreadyExists {
            throw VaultError(.duplicateItem, error.message, cause: error)
        } catch {
            throw VaultError(error)
        }
    }

    /// Fleet group `group`'s key, for other machines to join with (secret: write it 0600).
    public func exportFleetGroupKey(_ group: AccessGroup) throws(VaultError) -> SecureBytes {
        let exported = try translatingStoreErrors { () throws(StoreError) in
            try engine.store.exportReplicatedGroupKey(group.name)
        }
        // The caller holds it: in memory of its own, not on a page shared with this vault's keys.
        do {
            return try exported.copiedApart()
        } catch {
            throw VaultError(
                .allocate, "cannot hold the key of group \(group) in secure memory: \(error)", cause: error)
        }
    }

    /// Writes fleet group `group`'s key to the new file `path` (0600, never over an existing file), sealed
    /// under `key`: a passphrase (`BackupKey.passphrase`) or a backup key file (`BackupKey.keyFile(at:)`),
    /// which the joining machine gives to `joinFleetGroup(_:keyFileAt:settings:unixGroup:openingWith:)`.
    public func exportFleetGroupKey(_ group: AccessGroup, to path: String, sealedWith key: BackupKey)
        throws(VaultError)
    {
        do throws(StoreError) {
            try engine.store.exportReplicatedGroupKey(group.name, to: path, sealedWith: key)
        } catch  where error.code == .vaultAlreadyExists {
            throw VaultError(.duplicateItem, error.message, cause: error)
        } catch {
            throw VaultError(error)
        }
    }

    /// How the key file at `path` is sealed (`.passphrase` or `.keyFile`), or nil for one that an
    /// earlier build wrote in the clear; refused when others can access the file.
    public static func sealingOfFleetGroupKeyFile(at path: String) throws(VaultError) -> BackupFile.Sealing? {
        var bytes = try translatingStoreErrors { () throws(StoreError) in try VaultStore.readExportedGroupKey(path) }
        defer { bytes.wipe() }
        return VaultStore.sealingOfExportedGroupKey(bytes)
    }

    /// Joins fleet group `group` with the key file at `path`, opened with `key` when it is sealed (a
    /// key file in the clear, an earlier build's export, needs none; see
    /// `joinFleetGroup(_:keyFile:settings:unixGroup:)`).
    public func joinFleetGroup(
        _ group: AccessGroup, keyFileAt path: String, settings: FleetSettings, unixGroup: UInt32? = nil,
        openingWith key: BackupKey? = nil
    ) throws(VaultError) {
        var bytes = try translatingStoreErrors { () throws(StoreError) in try VaultStore.readExportedGroupKey(path) }
        // The file holds the group's keys, sealed or in the clear: not left in ordinary memory.
        defer { bytes.wipe() }
        guard VaultStore.sealingOfExportedGroupKey(bytes) != nil else {
            try joinFleetGroup(group, keyFile: bytes, settings: settings, unixGroup: unixGroup)
            return
        }
        guard let key else {
            throw VaultError(
                .param,
                "\(path) is sealed: give the passphrase or the backup key file it was exported with, to open it")
        }
        let opened = try translatingStoreErrors { () throws(StoreError) in
            try VaultStore.openExportedGroupKey(bytes, key: key, path: path)
        }
        var clear = opened.unprotectedCopy()
        defer { clear.wipe() }
        try joinFleetGroup(group, keyFile: clear, settings: settings, unixGroup: unixGroup)
    }

    /// Removes fleet group `group` from the fleet: from etcd (its items, their versions and its
    /// registration; a sealed record that says who removed it and when stays, so that every other
    /// machine says so rather than "not found"), then this machine's copy. Returns the number of items
    /// etcd held. The other machines refuse the group from then on (`groupNotFound`), and their
    /// `removeGroup(_:force: true)` removes their copies.
    public func removeFleetGroupEverywhere(_ group: AccessGroup) throws(VaultError) -> Int {
        let fleet = try fleetEngine()
        let removed = try translatingStoreErrors { () throws(StoreError) in
            try fleet.removeFromReplica(group.name, in: engine.store)
        }
        do {
            _ = try removeGroup(group, force: true)
        } catch {
            throw VaultError(
                error.status,
                "fleet group \(group) was removed from etcd (\(removed) items), but this machine's copy was not: "
                    + "\(error.message); `vault group rm \(group) --force` removes it", cause: error)
        }
        return removed
    }

    /// Whether `group` of the vault at `path` is a fleet group, by the flags of its `group.key` (read
    /// unchecked, the vault not opened: to choose a program, never to trust).
    public static func isFleetGroup(vaultPath path: String, group: AccessGroup) -> Bool {
        VaultStore.isFleetGroup(vaultPath: path, group: group.name)
    }

    /// Joins fleet group `group` with the key file another machine exported, after checking it against
    /// etcd's registration; its items are then read from etcd. Private to the owner here, or with
    /// `unixGroup` shared with that Unix group's members on this machine.
    public func joinFleetGroup(
        _ group: AccessGroup, keyFile: [UInt8], settings: FleetSettings, unixGroup: UInt32? = nil
    ) throws(VaultError) {
        let fleet = try fleetEngine()
        do throws(StoreError) {
            let key = try ReplicatedGroupKey(exported: keyFile, group: group.name)
            try fleet.joinGroup(group.name, key: key, settings: settings, unixGroup: unixGroup, in: engine.store)
        } catch  where error.code == .vaultAlreadyExists {
            throw VaultError(.duplicateItem, error.message, cause: error)
        } catch {
            throw VaultError(error)
        }
    }

    /// How this process last answered a read of fleet group `group`: `isStale` when etcd was out of
    /// reach and the answer came from this machine's cache, as it was at `knownCurrentAt`. nil for a
    /// group that is not a fleet group or was not read yet. Ask right after a read: another thread's
    /// read of the group updates it too. `watchFailure` is read when asked, not at the read: why the
    /// process's watch of the group is not running now.
    public func fleetCacheStatus(of group: AccessGroup) -> FleetCacheStatus? {
        (engine.store.replication as? any FleetEngine)?.cacheStatus(of: group.name, in: engine.store)
    }

    /// With `required`, every read of a fleet group asks etcd (a long-lived handle's watch no longer
    /// vouches for its cache), and fails with `notAvailable` rather than answer from the cache when
    /// etcd is out of reach: what `vault get --fresh` does.
    public func requireFreshFleetReads(_ required: Bool) {
        (engine.store.replication as? any FleetEngine)?.requireFreshReads(required)
    }

    /// Reads fleet group `group` from etcd anew. A group refused as rolled back (etcd restored to an
    /// older state than this machine has seen, or an item deleted, replayed or replaced there) stays
    /// refused unless `acceptingRollback`: then what etcd holds now becomes the group's state on every
    /// machine (items that do not open under the group's key are removed from etcd). Logged to syslog.
    public func resyncFleetGroup(_ group: AccessGroup, acceptingRollback: Bool) throws(VaultError) -> FleetResync {
        let fleet = try fleetEngine()
        return try translatingStoreErrors { () throws(StoreError) in
            try fleet.resync(group.name, acceptingRollback: acceptingRollback, in: engine.store)
        }
    }
}
