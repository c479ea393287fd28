import VaultStore

/// Rotation of a fleet group's key and revocation of its machines. Each machine registers a key pair
/// of its own in etcd when it first reads the group; a rotation seals the group's next key to every
/// registered machine it keeps, and each takes it at its next read.
extension Vault {
    /// Rotates fleet group `group`'s key online (the vault's owner): a new generation, sealed to every
    /// registered machine but those `revoking` names (an id from `fleetGroupMachines`, a unique prefix
    /// of one of at least 4 digits, or a unique host name), then every item and kept version in etcd
    /// sealed again under it. A machine left out keeps the key it had, which opens nothing written
    /// afterwards, and can no longer read the group; what it read before, it may have kept (change those
    /// secrets), and its etcd credentials should go too (docs/FLEET.md).
    public func rotateFleetGroup(_ group: AccessGroup, revoking machines: [String] = []) throws(VaultError)
        -> FleetRotation
    {
        let fleet = try fleetEngine()
        return try translatingStoreErrors { () throws(StoreError) in
            try fleet.rotate(group.name, revoking: machines, in: engine.store)
        }
    }

    /// The machines registered for fleet group `group` in etcd, in the order they registered.
    public func fleetGroupMachines(_ group: AccessGroup) throws(VaultError) -> [FleetMachine] {
        let fleet = try fleetEngine()
        return try translatingStoreErrors { () throws(StoreError) in
            try fleet.machines(of: group.name, in: engine.store)
        }
    }
}
