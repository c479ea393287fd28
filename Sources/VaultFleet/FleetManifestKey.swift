import VaultCrypto
import VaultStore

/// The key a fleet group's manifest and records are sealed with, so that every machine with the
/// group's current key has it and etcd does not. Each generation of the group's key has its own:
/// generation 1's is derived from the index key (as groups made before rotations had it), a later
/// one's from that generation's key, which a machine revoked by the rotation that made it never gets.
/// Items and manifests are digested under generation 1's, which rotations keep: a digest binds bytes
/// to a manifest that only the current key seals, and a rotation re-seals the manifest without
/// reading its items.
struct FleetManifestKey: Sendable {
    static let sealDomain = KeyDerivation.Domain("vault.fman.v2")
    static let rotatedSealDomain = KeyDerivation.Domain("vault.fman.v3")
    static let digestDomain = KeyDerivation.Domain("vault.fdig.v2")
    static let shardDigestDomain = KeyDerivation.Domain("vault.fshd.v1")

    let key: SymmetricKey
    /// What items and manifests are digested under.
    let digestKey: SymmetricKey
    let group: GroupName
    let groupID: [UInt8]
    /// The generation of the group's key it belongs to.
    let generation: UInt32

    /// The manifest key of `groupKey`'s current generation.
    init(key groupKey: ReplicatedGroupKey, group: GroupName) throws(StoreError) {
        try self.init(
            group: group, groupID: groupKey.groupID, indexKey: groupKey.indexKey, generation: groupKey.generation,
            generationKey: groupKey.generationKey)
    }

    /// The manifest key of generation `generation`, whose key is `generationKey`.
    init(group: GroupName, groupID: [UInt8], indexKey: SymmetricKey, generation: UInt32, generationKey: SymmetricKey)
        throws(StoreError)
    {
        do {
            digestKey = try KeyDerivation.subkey(of: indexKey, domain: Self.sealDomain, context: groupID)
            if generation <= 1 {
                key = digestKey
            } else {
                var context = groupID
                context.appendBigEndian(generation)
                key = try KeyDerivation.subkey(of: generationKey, domain: Self.rotatedSealDomain, context: context)
            }
        } catch {
            throw StoreError.crypto(error, "cannot derive the manifest key of fleet group \(group)")
        }
        self.group = group
        self.groupID = groupID
        self.generation = generation
    }

    /// The hint every refusal of etcd's state of `group` ends with.
    static func resyncHint(_ group: GroupName) -> String {
        "; nothing was taken from etcd. If etcd was restored on purpose, `vault group resync \(group) "
            + "--accept-rollback` makes its state the group's"
    }

    /// What a manifest's root is authenticated with beside its bytes: the group's id (a root copied from
    /// another group fails to open).
    var manifestAssociatedData: [UInt8] { Array("vault fleet manifest".utf8) + groupID }

    /// `manifest` sealed as a root (a random nonce, then its bytes encrypted), with the shards that etcd
    /// must be given beside it: those that differ from `previous`'s, or every shard when etcd holds no
    /// shards of `previous` (nil, or a manifest in one key, which an earlier build may have written over
    /// shards). Sets the manifest's shard digests.
    func seal(_ manifest: inout FleetManifest, over previous: FleetManifest?) throws(StoreError)
        -> (root: [UInt8], shards: [Int: [UInt8]])
    {
        guard manifest.itemCount <= FleetManifest.maximumItemCount else {
            throw StoreError(
                .invalidName,
                "fleet group \(group) would hold \(manifest.itemCount) items; a fleet group holds at most "
                    + "\(FleetManifest.maximumItemCount); nothing was changed")
        }
        var digests: [[UInt8]]
        var shards: [Int: [UInt8]]
        if let previous, let previousDigests = previous.shardDigests {
            digests = previousDigests
            let changed = manifest.shards(differingFrom: previous)
            if let loaded = manifest.loadedShards, !changed.isSubset(of: loaded) {
                throw StoreError(
                    .io,
                    "fleet group \(group): a write changed a shard of its manifest that it did not read; nothing was changed"
                )
            }
            shards = manifest.shardEncodings(changed)
            for (index, bytes) in shards { digests[index] = try shardDigest(of: bytes) }
        } else if manifest.loadedShards != nil {
            throw StoreError(
                .io, "fleet group \(group): a write of part of its manifest over none; nothing was changed")
        } else {
            digests = []
            shards = [:]
            let all = manifest.shardEncodings(Set(0..<FleetManifest.shardCount))
            for index in 0..<FleetManifest.shardCount {
                let bytes = all[index] ?? FleetManifest.emptyShard(index)
                digests.append(try shardDigest(of: bytes))
                shards[index] = bytes
            }
        }
        manifest.shardDigests = digests
        return (
            try seal(
                FleetManifestRoot(counter: manifest.counter, itemCount: manifest.itemCount, shardDigests: digests)),
            shards
        )
    }

    /// `root` sealed: a random nonce, then its bytes encrypted and authenticated with the group's id.
    func seal(_ root: FleetManifestRoot) throws(StoreError) -> [UInt8] {
        try seal(root.encoded(), associatedData: manifestAssociatedData, what: "the manifest")
    }

    /// Opens a group's sealed `manifest` key: a root, or a whole manifest; `integrity` when it does not
    /// open under this group's key or is neither (replaced, or another group's).
    func open(_ sealed: [UInt8]) throws(StoreError) -> OpenedManifest {
        try open(sealed, associatedData: manifestAssociatedData, what: "its manifest", decode: OpenedManifest.decode)
    }

    /// The manifest that `sealed` opens to, with `shards` (by index; an absent shard is empty) checked
    /// against its root's digests.
    func manifest(_ sealed: [UInt8], shards: [Int: [UInt8]]) throws(StoreError) -> FleetManifest {
        switch try open(sealed) {
        case .whole(let manifest): return manifest
        case .root(let root): return try manifest(root, shards: shards)
        }
    }

    /// The manifest of `root` and `shards` (by index; an absent shard is empty); `integrity` naming the
    /// first shard that is not the one the root lists. With `loading`, those shards alone (the items of
    /// the others counted, not listed).
    func manifest(_ root: FleetManifestRoot, shards: [Int: [UInt8]], loading: Set<Int>? = nil) throws(StoreError)
        -> FleetManifest
    {
        var items: [ItemID: FleetManifest.Entry] = [:]
        items.reserveCapacity(loading == nil ? root.itemCount : 0)
        for index in loading?.sorted() ?? Array(0..<FleetManifest.shardCount) {
            let bytes = shards[index] ?? FleetManifest.emptyShard(index)
            guard try shardDigest(of: bytes) == root.shardDigests[index],
                FleetManifest.decodeShard(bytes, index: index, into: &items), items.count <= root.itemCount
            else {
                throw StoreError(
                    .integrity,
                    "fleet group \(group): shard \(index) of its manifest in etcd is not the one the manifest's root "
                        + "lists (replaced, deleted, or an older one)" + Self.resyncHint(group))
            }
        }
        guard loading != nil || items.count == root.itemCount else {
            throw StoreError(
                .integrity,
                "fleet group \(group): its manifest's shards in etcd list \(items.count) items where its root says "
                    + "\(root.itemCount)" + Self.resyncHint(group))
        }
        var manifest = FleetManifest(counter: root.counter, items: items, shardDigests: root.shardDigests)
        manifest.loadedShards = loading
        manifest.unloadedItemCount = root.itemCount - items.count
        return manifest
    }

    /// `plaintext` sealed under the manifest key: a random nonce, then the bytes encrypted and
    /// authenticated with `associatedData`; `what` names it in an error.
    func seal(_ plaintext: [UInt8], associatedData: [UInt8], what: String) throws(StoreError) -> [UInt8] {
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            return nonce
                + (try XChaCha20Poly1305.seal(plaintext, key: key, nonce: nonce, associatedData: associatedData))
        } catch {
            throw StoreError.crypto(error, "cannot seal \(what) of fleet group \(group)")
        }
    }

    /// What `seal(_:associatedData:what:)` sealed, opened with `associatedData` and decoded; `integrity`
    /// naming `what` when it does not open under this group's key or `decode` refuses it.
    func open<Value>(
        _ sealed: [UInt8], associatedData: [UInt8], what: String, decode: ([UInt8]) -> Value?
    ) throws(StoreError) -> Value {
        let nonceCount = XChaCha20Poly1305.nonceByteCount
        let failure = StoreError(
            .integrity,
            "fleet group \(group): \(what) in etcd does not open under the group's key (replaced, or another "
                + "group's); nothing was read from etcd")
        guard sealed.count > nonceCount + XChaCha20Poly1305.tagByteCount else { throw failure }
        let plain: TransientBytes
        do {
            plain = try XChaCha20Poly1305.open(
                sealed, from: nonceCount, key: key, nonce: Array(sealed[..<nonceCount]),
                associatedData: associatedData, as: TransientBytes.self)
        } catch {
            throw failure
        }
        guard let value = plain.withBytes(decode) else { throw failure }
        return value
    }

    /// The digest of an item file that a manifest lists: a keyed hash, so that etcd cannot forge one.
    func digest(of contents: [UInt8]) throws(StoreError) -> [UInt8] {
        try keyedDigest(contents, domain: Self.digestDomain, what: "an item")
    }

    /// The digest of a manifest's shard that its root lists: a keyed hash under the digest key, which
    /// rotations keep, so that a rotation seals the root again without touching the shards.
    func shardDigest(of bytes: [UInt8]) throws(StoreError) -> [UInt8] {
        try keyedDigest(bytes, domain: Self.shardDigestDomain, what: "a shard of the manifest")
    }

    /// A 16-byte keyed hash of `bytes` under the digest key for `domain`; `what` names them in an error.
    private func keyedDigest(_ bytes: [UInt8], domain: KeyDerivation.Domain, what: String) throws(StoreError)
        -> [UInt8]
    {
        do {
            return try KeyDerivation.keyedHash(
                bytes, key: digestKey, domain: domain, outputByteCount: FleetManifest.digestByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot digest \(what) of fleet group \(group)")
        }
    }
}
