import VaultEtcd
import VaultStore
import VaultSystem

/// The machines of a fleet group: each registers its own key pair (`FleetMachineKey`) in the group's
/// `machines` record at its first complete refresh, so that a rotation can seal the group's next key
/// to it.
extension EtcdReplica {
    /// This machine's key for the group (the vault's owner's `fleet.machine`), made and kept when
    /// `creating` and there is none; nil when there is none.
    func machineKey(_ cache: ReplicaCache, creating: Bool) throws(StoreError) -> FleetMachineKey? {
        let groupKey = try cache.groupKey()
        if let bytes = try cache.readOwnersFile(
            FleetMachineKey.fileName, limit: FleetMachineKey.byteCount + 1, what: "this machine's key")
        {
            return try FleetMachineKey(
                bytes, groupKey: groupKey, path: cache.groupPath + "/" + FleetMachineKey.fileName)
        }
        guard creating else { return nil }
        let made = try FleetMachineKey.make()
        try cache.writeOwnersFile(FleetMachineKey.fileName, try made.encoded(groupKey))
        return made
    }

    /// The group's machines in `sealed` (its `machines` record; none when there is none).
    func machines(in sealed: EtcdKeyValue?) throws(StoreError) -> [FleetMachineRecord] {
        try sealed.map { (keyValue) throws(StoreError) in try sealer.openMachines(keyValue.value) } ?? []
    }

    /// Registers this machine in the group's `machines` record (`machines`, as the refresh read it) when
    /// it is not there: the vault owner's processes only, which hold the machine's key. A registration
    /// that etcd did not take (another machine registered meanwhile, etcd out of reach) is tried again
    /// at the next complete refresh: the read it is part of succeeded.
    func registerIfNeeded(_ machines: EtcdKeyValue?, cache: ReplicaCache) throws(StoreError) {
        guard ProcessIdentity.effectiveUserID == cache.vaultOwnerID,
            let me = try machineKey(cache, creating: true)
        else { return }
        var record = machines
        // Another machine registering meanwhile makes the compare fail: read again, a few times.
        for attempt in 0..<5 {
            let registered: [FleetMachineRecord]
            do {
                registered = try self.machines(in: record)
            } catch  where attempt > 0 {
                return  // read after another machine's rotation: the next complete refresh takes it, and registers
            }
            if let listed = registered.first(where: { $0.id == me.id }) {
                try checkOwnEntry(listed, me)
                return
            }
            guard registered.count < FleetMachineRecord.maximumCount else {
                SystemLog.notice(
                    "vault: fleet group \(group) has \(registered.count) machines registered, the most it takes: this "
                        + "machine (\(Hex.encode(me.id))) is not registered, and rotations leave it out")
                return
            }
            let sealed = try sealer.seal(registered + [me.record()])
            guard
                let result = try? client.transaction(
                    compare: [.modRevision(key: machinesKey, equals: record?.modRevision ?? 0)],
                    success: [.put(key: machinesKey, value: sealed)],
                    failure: [.range(key: machinesKey, rangeEnd: nil)]),
                !result.succeeded
            else { return }
            record = result.ranges.first??.keyValues.first
        }
    }

    /// Refuses the group's list of machines when this machine's entry holds another public key than its
    /// own: whoever wrote the list (a machine with the group's key, about to be revoked) would get the
    /// next rotation's key in this machine's name.
    func checkOwnEntry(_ listed: FleetMachineRecord, _ me: FleetMachineKey) throws(StoreError) {
        guard listed.publicKey != me.publicKey else { return }
        throw StoreError(
            .integrity,
            "fleet group \(group): etcd's list of its machines gives this machine (\(listed.idHex)) another public "
                + "key than its own: a machine with the group's key replaced it; revoke the machines you do not know "
                + "(`vault group machines \(group)`) from another machine, and their etcd credentials")
    }

    /// The group's machines as etcd holds them now, with the record's revision.
    func currentMachines() throws(StoreError) -> (machines: [FleetMachineRecord], revision: Int64) {
        let found: EtcdKeyValue?
        do {
            found = try client.range(machinesKey).keyValues.first { $0.key == machinesKey }
        } catch {
            throw storeError(error, "cannot read its machines from etcd")
        }
        return (try machines(in: found), found?.modRevision ?? 0)
    }
}
