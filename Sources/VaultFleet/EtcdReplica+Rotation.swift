import VaultCrypto
import VaultEtcd
import VaultStore
import VaultSystem

/// Rotation of a fleet group's key, online: one transaction puts the group's next generation, sealed to
/// each machine kept (`FleetKeyring`), with the manifest and records sealed under its manifest key;
/// every machine takes it at its next refresh. Then each item and kept version in etcd is sealed again
/// under it, in batches. A machine left out (revoked) keeps the key it had, which opens nothing
/// written afterwards, and can no longer read the group.
///
/// A rotation's first step is to finish what an interrupted one left under the generation before: a
/// machine holds two generations, so nothing may stay under the one before when the next comes.
extension EtcdReplica {
    /// What `rotate` did.
    struct Rotation {
        var generation: UInt32
        var kept: [FleetMachineRecord]
        var revoked: [FleetMachineRecord]
        var itemsResealed: Int
        var versionsResealed: Int
        var itemsLeft: Int
    }

    // MARK: Taking a rotation

    /// Takes each rotation in `keyring` (etcd's `keyring` record) past this machine's generation, in
    /// order: opens the key sealed to this machine and makes it the group's. Refused when this machine
    /// is not among those a rotation kept (revoked), or is not the vault's owner (who alone holds the
    /// machine's key and writes `group.key`).
    func adoptRotations(_ keyring: [UInt8], cache: ReplicaCache) throws(StoreError) {
        let decoded = try self.keyring(keyring)
        var current = sealer
        // Another process of this machine (the owner's, for a member's) may have taken rotations since this
        // one read `group.key`.
        let onDisk = try cache.groupKey()
        if onDisk.generation > current.generation {
            current = try FleetManifestKey(key: onDisk, group: group)
            sealer = current
        }
        guard let latest = decoded.latestGeneration, latest > current.generation else { return }
        guard ProcessIdentity.effectiveUserID == cache.vaultOwnerID else {
            throw StoreError(
                .permissionDenied,
                "fleet group \(group): its key was rotated on another machine (generation \(latest)); this machine "
                    + "takes the new key when the vault's owner (uid \(cache.vaultOwnerID)) next uses the group, e.g. "
                    + "`vault ls --group \(group)`; nothing was read from etcd")
        }
        guard let me = try machineKey(cache, creating: false) else { throw notKept(generation: current.generation + 1) }
        let indexKey = onDisk.indexKey
        while current.generation < latest {
            let next = current.generation + 1
            guard let rotation = decoded.rotations.first(where: { $0.generation == next }) else {
                throw StoreError(
                    .permissionDenied,
                    "fleet group \(group): this machine holds generation \(current.generation) of the group's key, "
                        + "and etcd keeps only the last rotations (to generation \(latest)): " + rejoinHint)
            }
            guard let box = try current.openRotation(rotation.sealed, to: next)[me.id] else {
                throw notKept(generation: next)
            }
            guard let key = FleetKeyring.key(in: box, opener: me, generation: next, groupID: identity.groupID) else {
                throw StoreError(
                    .integrity,
                    "fleet group \(group): the key etcd holds for this machine at generation \(next) does not open "
                        + "under this machine's key (\(cache.groupPath)/\(FleetMachineKey.fileName)): " + rejoinHint)
            }
            try cache.adoptGroupKey(generation: next, key: key)
            current = try FleetManifestKey(
                group: group, groupID: identity.groupID, indexKey: indexKey, generation: next, generationKey: key)
            sealer = current
            SystemLog.notice(
                "vault: fleet group \(group) of the vault at \(cache.vaultPath) took generation \(next) of its key, "
                    + "rotated on another machine")
        }
    }

    /// `bytes`, etcd's `keyring` record, decoded; `integrity` when it is not one.
    func keyring(_ bytes: [UInt8]) throws(StoreError) -> FleetKeyring {
        guard let decoded = FleetKeyring.decode(bytes) else {
            throw StoreError(
                .integrity,
                "fleet group \(group): its keyring in etcd is not one (damaged or replaced); nothing was taken from "
                    + "etcd or changed")
        }
        return decoded
    }

    private var rejoinHint: String {
        "nothing was read from etcd. To take part again, remove the group here (`vault group rm \(group) --force`) "
            + "and join it with a key file exported since on a machine of the group"
    }

    private func notKept(generation: UInt32) -> StoreError {
        StoreError(
            .permissionDenied,
            "fleet group \(group): this machine is not among the machines generation \(generation) of the group's key "
                + "was sealed to: it was revoked (`vault group revoke`), or registered after that rotation; "
                + rejoinHint)
    }

    // MARK: Rotating

    /// Rotates the group's key (the vault's owner, under the group's lock): every registered machine but
    /// those `revoking` names (an id, a unique prefix of one of at least 4 digits, or a unique host name)
    /// gets the next generation. A write of another machine meanwhile makes it try again on what etcd
    /// answered.
    func rotate(_ cache: ReplicaCache, revoking names: [String]) throws(StoreError) -> Rotation {
        guard ProcessIdentity.effectiveUserID == cache.vaultOwnerID else {
            throw StoreError(
                .permissionDenied,
                "only the vault's owner (uid \(cache.vaultOwnerID)) rotates fleet group \(group)'s key; nothing was "
                    + "changed")
        }
        try refresh(cache)
        let unfinished = try resealEverything(cache)
        guard unfinished.itemsLeft == 0 else {
            throw StoreError(
                .conflict,
                "fleet group \(group): \(unfinished.itemsLeft) items are still sealed under the key before the current "
                    + "one, and other machines kept writing while they were sealed again; nothing was rotated: run the "
                    + "command again")
        }
        let current = sealer
        let generation = current.generation + 1
        let key: SymmetricKey
        do {
            key = try SymmetricKey.random()
        } catch {
            throw StoreError.crypto(error, "cannot make the next key of fleet group \(group)")
        }
        let next = try FleetManifestKey(
            group: group, groupID: identity.groupID, indexKey: try cache.groupKey().indexKey, generation: generation,
            generationKey: key)
        var head = try readRotationHead()
        var boxes: (kept: [FleetMachineRecord], boxes: [(id: [UInt8], box: [UInt8])])?
        for attempt in 1...Self.rotationAttempts {
            // Another machine's rotation since this one's refresh: what etcd holds is sealed under a key this
            // machine has not taken.
            if let keyring = head.first(where: { $0.key == keyringKey }),
                (FleetKeyring.decode(keyring.value)?.latestGeneration ?? 0) >= generation
            {
                forget()
                throw StoreError(
                    .conflict,
                    "fleet group \(group)'s key was rotated on another machine meanwhile; nothing was rotated here: "
                        + "run the command again (it takes that rotation first)")
            }
            let (machines, revoked) = try machinesKept(head, cache, revoking: names)
            if boxes?.kept != machines { boxes = (machines, try seal(key, generation: generation, to: machines)) }
            let puts = try rotationPuts(head, cache, next: next, kept: machines, boxes: boxes!.boxes)
            let result: EtcdTransactionResult
            do {
                result = try client.transaction(
                    compare: rotationHeadKeys.map { key in
                        .modRevision(key: key, equals: head.first { $0.key == key }?.modRevision ?? 0)
                    },
                    success: puts, failure: rotationHeadKeys.map { .range(key: $0, rangeEnd: nil) })
            } catch {
                forget()
                throw storeError(error, "cannot rotate its key in etcd")
            }
            if result.succeeded {
                forget()
                do throws(StoreError) {
                    try cache.adoptGroupKey(generation: generation, key: key)
                    sealer = next
                    try refresh(cache)
                    let done = try resealEverything(cache)
                    return Rotation(
                        generation: generation, kept: machines, revoked: revoked, itemsResealed: done.items,
                        versionsResealed: done.versions, itemsLeft: done.itemsLeft)
                } catch {
                    // Every machine kept takes the new key from etcd (this one at its next refresh): the rotation
                    // happened, and what is left is sealed again by the next one.
                    throw StoreError(
                        error.code,
                        "fleet group \(group)'s key was rotated to generation \(generation) (sealed to "
                            + "\(machines.count) machines), but \(error.message); every item stays readable, and the "
                            + "next `vault group rotate \(group)` first seals again what this one left", cause: error)
                }
            }
            guard attempt < Self.rotationAttempts else { break }
            head = result.ranges.compactMap { $0?.keyValues.first }
        }
        forget()
        throw StoreError(
            .conflict,
            "fleet group \(group) kept changing on other machines; nothing was rotated: run the command again")
    }

    /// How many times a rotation is tried when other machines write meanwhile: each try starts from what
    /// the failed one's answer held, so it fails only when another write lands within one request's time.
    static let rotationAttempts = 50

    /// How many times each batch that seals items again is tried: a batch's try also brings this
    /// machine's cache to the write that beat it (its mark and the items, each flushed), so on a loaded
    /// machine a steady writer elsewhere beats most tries; the batches are where a rotation waits.
    static let resealAttempts = 200

    /// The keys a rotation's transaction compares and rewrites.
    private var rotationHeadKeys: [[UInt8]] { [manifestKey, keyringKey, machinesKey, acceptedKey, rollbackKey] }

    /// Those keys as etcd holds them now (the absent ones left out).
    private func readRotationHead() throws(StoreError) -> [EtcdKeyValue] {
        do {
            return try client.transaction(compare: [], success: rotationHeadKeys.map { .range(key: $0, rangeEnd: nil) })
                .ranges.compactMap { $0?.keyValues.first }
        } catch {
            throw storeError(error, "cannot read its manifest from etcd")
        }
    }

    /// The machines a rotation over `head` keeps, and those it revokes (`names`); refused while a
    /// rollback report stands, or when this machine is not registered.
    private func machinesKept(_ head: [EtcdKeyValue], _ cache: ReplicaCache, revoking names: [String])
        throws(StoreError) -> (kept: [FleetMachineRecord], revoked: [FleetMachineRecord])
    {
        if head.contains(where: { $0.key == rollbackKey }) {
            throw StoreError(
                .integrity,
                "fleet group \(group): a machine reported that etcd went back, and a rotation waits until that is "
                    + "settled (`vault group resync \(group)`, with `--accept-rollback` if etcd was restored on "
                    + "purpose); nothing was changed")
        }
        let machines = try self.machines(in: head.first { $0.key == machinesKey })
        guard let me = try machineKey(cache, creating: false), let listed = machines.first(where: { $0.id == me.id })
        else {
            throw StoreError(
                .unavailable,
                "fleet group \(group): this machine is not registered in etcd yet (its registration did not go "
                    + "through); run the command again; nothing was changed")
        }
        try checkOwnEntry(listed, me)
        let revoked = try resolve(names, among: machines, me: me)
        return (machines.filter { machine in !revoked.contains { $0.id == machine.id } }, revoked)
    }

    /// What the rotation over `head` puts: the keyring with the rotation to `next`'s generation (`boxes`),
    /// and the list of machines `kept`, the manifest (the next counter, the same items) and the accepted
    /// record sealed under `next`. The manifest must not be older than this machine has seen: a refresh then
    /// refuses it in its own words.
    private func rotationPuts(
        _ head: [EtcdKeyValue], _ cache: ReplicaCache, next: FleetManifestKey, kept: [FleetMachineRecord],
        boxes: [(id: [UInt8], box: [UInt8])]
    ) throws(StoreError) -> [EtcdOperation] {
        let current = sealer
        guard let manifestValue = head.first(where: { $0.key == manifestKey }) else {
            try refresh(cache)
            throw StoreError(.integrity, "fleet group \(group): etcd holds no manifest for it; nothing was changed")
        }
        let manifest = try current.open(manifestValue.value)
        let digest = try current.digest(of: manifestValue.value)
        if let mark = try cache.highWaterMark(),
            manifest.counter < mark.counter || manifest.counter == mark.counter && digest != mark.digest
        {
            try refresh(cache)
            throw StoreError(.integrity, "fleet group \(group): etcd went back; nothing was changed" + resyncHint)
        }
        // The manifest is sealed again as it is, at the next counter: a root's tree is digested under the
        // key rotations keep, and an earlier build's manifest keeps its format until the next write.
        var resealed = manifest
        resealed.counter += 1
        let manifestPuts: [EtcdOperation] = [.put(key: manifestKey, value: try next.sealManifest(resealed.encoded()))]
        var keyring =
            try head.first { $0.key == keyringKey }.map { (keyValue) throws(StoreError) in
                try self.keyring(keyValue.value)
            } ?? FleetKeyring(rotations: [])
        keyring.rotations.append(
            .init(generation: next.generation, sealed: try current.sealRotation(to: next.generation, boxes: boxes)))
        keyring.rotations = Array(keyring.rotations.suffix(FleetKeyring.keptRotations))
        while keyring.rotations.count > 1, keyring.encoded().count > FleetKeyring.maximumByteCount {
            keyring.rotations.removeFirst()
        }
        var puts: [EtcdOperation] =
            [
                .put(key: keyringKey, value: keyring.encoded()), .put(key: machinesKey, value: try next.seal(kept)),
            ] + manifestPuts
        if let accepted = head.first(where: { $0.key == acceptedKey }) {
            puts.append(.put(key: acceptedKey, value: try next.seal(try current.open(accepted.value, as: .accepted))))
        }
        return puts
    }

    /// `key`, generation `generation`'s, sealed to each of `machines`.
    private func seal(_ key: SymmetricKey, generation: UInt32, to machines: [FleetMachineRecord]) throws(StoreError)
        -> [(id: [UInt8], box: [UInt8])]
    {
        do {
            return try machines.map { (machine) throws(CryptoError) in
                (
                    machine.id,
                    try FleetKeyring.box(key, generation: generation, groupID: identity.groupID, to: machine.publicKey)
                )
            }
        } catch {
            throw StoreError.crypto(error, "cannot seal the next key of fleet group \(group)")
        }
    }

    /// The machines `names` name among `machines`; this machine (`me`) is never one.
    private func resolve(_ names: [String], among machines: [FleetMachineRecord], me: FleetMachineKey)
        throws(StoreError) -> [FleetMachineRecord]
    {
        let listing = machines.map { "\($0.idHex) (\($0.name))" }.joined(separator: ", ")
        var revoked: [FleetMachineRecord] = []
        for name in names {
            let lowered = name.lowercased()
            var matches = machines.filter { $0.idHex == lowered }
            if matches.isEmpty, lowered.count >= 4 { matches = machines.filter { $0.idHex.hasPrefix(lowered) } }
            if matches.isEmpty { matches = machines.filter { $0.name == name } }
            guard matches.count == 1, let machine = matches.first else {
                throw StoreError(
                    .invalidName,
                    "fleet group \(group): "
                        + (matches.isEmpty ? "no machine is" : "\(matches.count) machines are")
                        + " named \(name) (its machines: \(listing)); name one by its id; nothing was changed")
            }
            guard machine.id != me.id else {
                throw StoreError(
                    .invalidName,
                    "\(name) is this machine: a machine cannot revoke itself; run the command on another machine of "
                        + "fleet group \(group), or remove the group here (`vault group rm \(group) --force`); nothing "
                        + "was changed")
            }
            if !revoked.contains(where: { $0.id == machine.id }) { revoked.append(machine) }
        }
        return revoked
    }
}
