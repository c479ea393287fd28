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
    static let nodeDigestDomain = KeyDerivation.Domain("vault.fnod.v1")
    static let leafDigestDomain = KeyDerivation.Domain("vault.flef.v1")

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

    /// `root` sealed: a random nonce, then its bytes encrypted and authenticated with the group's id.
    func seal(_ root: FleetManifestRoot) throws(StoreError) -> [UInt8] {
        try sealManifest(root.encoded())
    }

    /// A manifest's bytes, in any of its formats, sealed as `seal(_:)` seals a root.
    func sealManifest(_ bytes: [UInt8]) throws(StoreError) -> [UInt8] {
        try seal(bytes, associatedData: manifestAssociatedData, what: "the manifest")
    }

    /// Opens a group's sealed `manifest` key: a root, or an earlier build's manifest; `integrity` when it
    /// does not open under this group's key or is none of them (replaced, or another group's).
    func open(_ sealed: [UInt8]) throws(StoreError) -> OpenedManifest {
        try open(sealed, associatedData: manifestAssociatedData, what: "its manifest", decode: OpenedManifest.decode)
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

    /// The digest of a node of a manifest's tree that its root lists, and of a leaf that its node lists:
    /// keyed hashes under the digest key, which rotations keep, so that a rotation seals the root again
    /// without touching the tree.
    func nodeDigest(of bytes: [UInt8]) throws(StoreError) -> [UInt8] {
        try keyedDigest(bytes, domain: Self.nodeDigestDomain, what: "a node of the manifest")
    }

    func leafDigest(of bytes: [UInt8]) throws(StoreError) -> [UInt8] {
        try keyedDigest(bytes, domain: Self.leafDigestDomain, what: "a leaf of the manifest")
    }

    /// The digest of a shard of an earlier build's manifest (`FleetShardedRoot`).
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
