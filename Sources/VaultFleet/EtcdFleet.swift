import Synchronization
import Vault
import VaultStore
import VaultSystem

extension FleetClient {
    /// Fleet groups through etcd. `watching`: each group's replica keeps a watch on etcd, so that a read
    /// within a second of the last check, with no change reported since, needs no request (a long-lived
    /// process); without it every read checks etcd (a command that reads once).
    public static func etcd(watching: Bool = true) -> FleetClient {
        FleetClient { EtcdFleet(watching: watching) }
    }
}

/// The fleet engine of one open vault: makes its fleet groups' replicas (`FleetGroup` over
/// `EtcdReplica`), and creates, joins and resynchronises fleet groups.
final class EtcdFleet: FleetEngine {
    let watching: Bool
    private let freshOnly = Atomic<Bool>(false)

    init(watching: Bool) {
        self.watching = watching
    }

    /// Whether every read must be confirmed by etcd (`requireFreshReads`).
    var freshReadsOnly: Bool { freshOnly.load(ordering: .relaxed) }

    func requireFreshReads(_ required: Bool) {
        freshOnly.store(required, ordering: .relaxed)
    }

    func replica(of group: GroupName, cache: ReplicaCache) throws(StoreError) -> any GroupReplica {
        let identity = try FleetGroupIdentity(
            group: group, key: try cache.groupKey(), settings: try FleetSettings.read(from: cache),
            vaultOwnerID: cache.vaultOwnerID)
        return FleetGroup(replica: try EtcdReplica(identity, watching: watching), fleet: self)
    }

    func createGroup(_ group: GroupName, settings: FleetSettings, unixGroup: UInt32?, in store: VaultStore)
        throws(StoreError)
    {
        let key = try ReplicatedGroupKey.random()
        try add(group, key: key, settings: settings, unixGroup: unixGroup, in: store, what: "create a group") {
            (replica) throws(StoreError) in try replica.register(key)
        }
        // Registers this machine, for the group's rotations.
        try store.refreshReplicatedGroup(group)
    }

    func joinGroup(
        _ group: GroupName, key: ReplicatedGroupKey, settings: FleetSettings, unixGroup: UInt32?, in store: VaultStore
    ) throws(StoreError) {
        try add(group, key: key, settings: settings, unixGroup: unixGroup, in: store, what: "join a group") {
            (replica) throws(StoreError) in try replica.verifyRegistration(key)
        }
        try store.refreshReplicatedGroup(group)
    }

    /// The steps `createGroup` and `joinGroup` share: `agree` registers the key's check value with etcd
    /// or checks it against the registration, under the vault's lock, before the directory is made.
    private func add(
        _ group: GroupName, key: ReplicatedGroupKey, settings: FleetSettings, unixGroup: UInt32?, in store: VaultStore,
        what: String, agree: (EtcdReplica) throws(StoreError) -> Void
    ) throws(StoreError) {
        try store.addReplicatedGroup(
            group, key: key, unixGroup: unixGroup,
            settings: (FleetSettings.fileName, Array(settings.encoded().utf8)), what: what
        ) { () throws(StoreError) in
            let identity = try FleetGroupIdentity(
                group: group, key: key, settings: settings, vaultOwnerID: store.replicaCache(of: group).vaultOwnerID)
            try agree(try EtcdReplica(identity, watching: false))
        }
    }

    func removeFromReplica(_ group: GroupName, in store: VaultStore) throws(StoreError) -> Int {
        let fleetGroup = try self.fleetGroup(group, in: store)
        let cache = store.replicaCache(of: group)
        let removed = try cache.withGroupLock { () throws(StoreError) -> Int in
            try fleetGroup.replica.removeFromEtcd(cache)
        }
        SystemLog.notice(
            "vault: fleet group \(group) of the vault at \(store.path) removed from the fleet (etcd included, "
                + "\(removed) items) by uid \(ProcessIdentity.effectiveUserID)")
        return removed
    }

    func rotate(_ group: GroupName, revoking: [String], in store: VaultStore) throws(StoreError) -> FleetRotation {
        let fleetGroup = try self.fleetGroup(group, in: store)
        let cache = store.replicaCache(of: group)
        let rotation: EtcdReplica.Rotation
        do throws(StoreError) {
            rotation = try fleetGroup.refreshing(cache) { (replica) throws(StoreError) in
                try replica.rotate(cache, revoking: revoking)
            }
        } catch {
            SystemLog.notice(
                "vault: rotation of fleet group \(group)'s key in the vault at \(store.path) by uid "
                    + "\(ProcessIdentity.effectiveUserID) failed: \(error.message)")
            throw error
        }
        let me = try? fleetGroup.replica.machineKey(cache, creating: false)
        let kept = rotation.kept.map { Self.machine($0, thisMachine: me) }
        let revoked = rotation.revoked.map { Self.machine($0, thisMachine: me) }
        SystemLog.notice(
            "vault: fleet group \(group)'s key rotated to generation \(rotation.generation) in the vault at "
                + "\(store.path) by uid \(ProcessIdentity.effectiveUserID): sealed to \(kept.count) machines"
                + (revoked.isEmpty
                    ? "" : ", revoked " + revoked.map { "\($0.id) (\($0.hostName))" }.joined(separator: ", ")))
        return FleetRotation(
            generation: rotation.generation, kept: kept, revoked: revoked, itemsResealed: rotation.itemsResealed,
            versionsResealed: rotation.versionsResealed, itemsLeft: rotation.itemsLeft)
    }

    func machines(of group: GroupName, in store: VaultStore) throws(StoreError) -> [FleetMachine] {
        let fleetGroup = try self.fleetGroup(group, in: store)
        // Read under the group's current key: a rotation made elsewhere is taken first.
        try store.refreshReplicatedGroup(group)
        let me = try? fleetGroup.replica.machineKey(store.replicaCache(of: group), creating: false)
        return try fleetGroup.replica.currentMachines().machines.map { Self.machine($0, thisMachine: me) }
    }

    private static func machine(_ record: FleetMachineRecord, thisMachine: FleetMachineKey??) -> FleetMachine {
        FleetMachine(
            id: record.idHex, hostName: record.name, userID: record.userID, registeredAt: record.time,
            isThisMachine: (thisMachine ?? nil)?.id == record.id)
    }

    private func fleetGroup(_ group: GroupName, in store: VaultStore) throws(StoreError) -> FleetGroup {
        guard let fleetGroup = try store.requireReplica(of: group) as? FleetGroup else {
            throw StoreError(.invalidName, "group \(group) is not a fleet group of etcd")
        }
        return fleetGroup
    }

    func cacheStatus(of group: GroupName, in store: VaultStore) -> FleetCacheStatus? {
        (store.knownReplica(of: group) as? FleetGroup)?.status()
    }

    /// Reads fleet group `group` from etcd anew, under its lock. With `acceptingRollback`, what etcd
    /// holds now becomes the group's state even when it is older than this machine has seen (an
    /// operator who restored etcd on purpose): a new manifest above every counter seen, then the
    /// refresh. Either way the outcome, a refusal or failure included, goes to the system log.
    func resync(_ group: GroupName, acceptingRollback: Bool, in store: VaultStore) throws(StoreError) -> FleetResync {
        let who = "fleet group \(group) of the vault at \(store.path), by uid \(ProcessIdentity.effectiveUserID)"
        let report: FleetResync
        do throws(StoreError) {
            let cache = store.replicaCache(of: group)
            report = try fleetGroup(group, in: store).refreshing(cache) { (replica) throws(StoreError) in
                try replica.resync(cache, acceptingRollback: acceptingRollback)
            }
        } catch {
            // An operator's attempt to accept a rollback that did not happen is worth a line too.
            SystemLog.notice(
                "vault: resynchronisation of \(who)\(acceptingRollback ? ", accepting a rollback," : "") failed: "
                    + error.message)
            throw error
        }
        let previous = report.previousCounter.map(String.init) ?? "none"
        let found = report.replicaCounter.map(String.init) ?? "none that opened"
        SystemLog.notice(
            "vault: fleet group \(group) of the vault at \(store.path) resynchronised by uid "
                + "\(ProcessIdentity.effectiveUserID)" + (acceptingRollback ? ", rollback accepted" : "")
                + ": this machine had seen manifest \(previous), etcd had \(found), now \(report.counter) "
                + "(\(report.itemCount) items, \(report.removedCount) that did not open removed)")
        return report
    }
}
