import VaultCrypto
import VaultEtcd
import VaultStore

/// A fleet group's registration in etcd, its `meta` key: a header line and two keyed hashes under the
/// group's key, one of its id (the check that a key file belongs to the group) and one of its name (so
/// that a key file exported under another name is refused). Neither the key nor the name is in etcd.
extension EtcdReplica {
    static let nameDomain = KeyDerivation.Domain("vault.fnam.v2")

    private func registration(_ key: ReplicatedGroupKey) throws(StoreError) -> [UInt8] {
        let check = try FleetGroupIdentity.check(of: key)
        let name: [UInt8]
        do {
            name = try KeyDerivation.keyedHash(
                Array(identity.group.rawValue.utf8), key: key.indexKey, domain: Self.nameDomain)
        } catch {
            throw StoreError.crypto(error, "cannot compute the name check of fleet group \(identity.group)")
        }
        return Array("vault fleet group v1\nname-check=\(Hex.encode(name))\ncheck=\(Hex.encode(check))\n".utf8)
    }

    /// The registration that builds before this one wrote: the name in the clear.
    private func registrationWithTheName(_ key: ReplicatedGroupKey) throws(StoreError) -> [UInt8] {
        let check = try FleetGroupIdentity.check(of: key)
        return Array("vault fleet group v1\nname=\(identity.group)\ncheck=\(Hex.encode(check))\n".utf8)
    }

    /// Registers the group under its id with an empty manifest; refused when the id is registered.
    func register(_ key: ReplicatedGroupKey) throws(StoreError) {
        let empty = try sealer.seal(
            FleetManifestRoot(counter: 0, itemCount: 0, tree: FleetManifestTree(epoch: FleetManifestTree.newEpoch())))
        let registration = try registration(key)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [.createRevision(key: metaKey, equals: 0), .createRevision(key: manifestKey, equals: 0)],
                success: [.put(key: metaKey, value: registration), .put(key: manifestKey, value: empty)])
        } catch {
            throw storeError(error, "cannot register it in etcd")
        }
        guard result.succeeded else {
            throw StoreError(.vaultAlreadyExists, "fleet group \(identity.group): its id is registered in etcd already")
        }
    }

    /// Refuses `key` when the group's key was rotated past its generation: a machine joins with the
    /// current key only (a kept key file of a revoked machine joins nothing).
    private func refuseRotatedAway(_ key: ReplicatedGroupKey) throws(StoreError) {
        let keyring: [UInt8]?
        do {
            keyring = try client.range(keyringKey).keyValues.first { $0.key == keyringKey }?.value
        } catch {
            throw storeError(error, "cannot read its keyring")
        }
        guard let keyring else { return }
        guard let latest = try self.keyring(keyring).latestGeneration else {
            throw StoreError(.integrity, "fleet group \(identity.group): its keyring in etcd holds no rotation")
        }
        guard latest <= key.generation else {
            throw StoreError(
                .permissionDenied,
                "fleet group \(identity.group): the key file holds generation \(key.generation) of the group's key, "
                    + "which was rotated since (to generation \(latest)): export a key file again on a machine of the "
                    + "group (`vault group export-key \(identity.group) FILE`); nothing was changed")
        }
    }

    /// Checks that etcd registered a group with `key` under this name. A registration that holds the
    /// name in the clear (an earlier build's) is replaced by one that does not.
    func verifyRegistration(_ key: ReplicatedGroupKey) throws(StoreError) {
        let found: EtcdRangeResult
        do {
            // The registration, and the record of a removal from the fleet (which took its place).
            found = try client.range(metaKey, rangeEnd: removedKey + [0])
        } catch {
            throw storeError(error, "cannot read its registration")
        }
        if let removed = found.keyValues.first(where: { $0.key == removedKey }) {
            throw try removal(removed.value, groupKeysRemain: found.keyValues.contains { $0.key == metaKey })
        }
        guard let registered = found.keyValues.first(where: { $0.key == metaKey })?.value else {
            throw StoreError(
                .groupNotFound,
                "fleet group \(identity.group): etcd at \(identity.settings.endpoints.joined(separator: ",")) has no "
                    + "group with this key's id (made with `vault group create --etcd`, on the same cluster?)")
        }
        try refuseRotatedAway(key)
        let expected = try registration(key)
        if registered == expected { return }
        guard registered == (try registrationWithTheName(key)) else {
            throw StoreError(
                .integrity,
                "fleet group \(identity.group): the key file does not match the group etcd has under its id (another "
                    + "group's key, or the name differs)")
        }
        // Only while it still holds the old form: a failure leaves it for the next join.
        _ = try? client.transaction(
            compare: [.value(key: metaKey, equals: registered)], success: [.put(key: metaKey, value: expected)])
    }
}
