import VaultCrypto
import VaultStore

/// What a fleet group holds at one point of its history: a counter that every write raises by one,
/// and each item's id with a digest of its file. It is stored in the replica next to the items,
/// sealed under a key of the group's, and every write replaces it in the same replica transaction
/// as the item. A machine that remembers the highest counter it saw (`FleetMark`) can tell when the
/// replica went back (a restored snapshot, a member rolled back) and when an item was deleted,
/// replaced with an older value of itself or brought back after its deletion.
struct FleetManifest: Sendable, Equatable {
    /// Raised by one with every write and deletion in the group.
    var counter: UInt64
    /// Each item's id with the 16-byte digest of its file (`FleetManifestKey.digest(of:)`) and its
    /// version: the counter of the manifest that its last write made.
    var items: [ItemID: Entry]

    /// One item of a manifest.
    struct Entry: Sendable, Equatable {
        /// `FleetManifestKey.digest(of:)` of the item's file.
        var digest: [UInt8]
        /// The counter of the manifest its last write made.
        var version: UInt64

        /// An entry.
        init(digest: [UInt8], version: UInt64) {
            self.digest = digest
            self.version = version
        }
    }

    /// A manifest of `items` at `counter`.
    init(counter: UInt64, items: [ItemID: Entry]) {
        self.counter = counter
        self.items = items
    }

    /// The most items a fleet group holds: its manifest goes into every write's request with the
    /// item (etcd refuses requests over 1.5 MiB by default; 56 bytes per item).
    static let maximumItemCount = 5_000

    static let magic = Array("VFM2".utf8)
    static let digestByteCount = 16

    /// The manifest's bytes: magic, counter (8 bytes, big-endian), item count (4 bytes), then each
    /// item's 32 hash bytes, 16 digest bytes and version (8 bytes, big-endian), in id order.
    func encoded() -> [UInt8] {
        var bytes = Self.magic
        bytes.appendBigEndian(counter)
        bytes.appendBigEndian(UInt32(truncatingIfNeeded: items.count))
        for id in items.keys.sorted() {
            guard let entry = items[id] else { continue }
            bytes += id.hashBytes + entry.digest
            bytes.appendBigEndian(entry.version)
        }
        return bytes
    }

    /// Above every counter that writes reach (one a nanosecond for a century is below 2^62): a counter
    /// at the end of `UInt64` would overflow the next write's, so it is no manifest of ours.
    static let maximumCounter: UInt64 = 1 << 62

    /// Parses `encoded()`'s bytes; nil when they are not a manifest.
    static func decode(_ bytes: [UInt8]) -> FleetManifest? {
        let header = magic.count + 12
        guard bytes.count >= header, Array(bytes[..<magic.count]) == magic else { return nil }
        let counter = UInt64(bigEndianBytes: bytes[magic.count..<magic.count + 8])
        guard counter < maximumCounter else { return nil }
        let count = Int(UInt32(bigEndianBytes: bytes[magic.count + 8..<header]))
        let entry = ItemID.hashByteCount + digestByteCount + 8
        guard bytes.count == header + count * entry else { return nil }
        var items: [ItemID: Entry] = [:]
        for index in 0..<count {
            let start = header + index * entry
            guard let id = try? ItemID(hashBytes: Array(bytes[start..<start + ItemID.hashByteCount])) else {
                return nil
            }
            let digestStart = start + ItemID.hashByteCount
            let version = UInt64(bigEndianBytes: bytes[digestStart + digestByteCount..<start + entry])
            items[id] = Entry(digest: Array(bytes[digestStart..<digestStart + digestByteCount]), version: version)
        }
        guard items.count == count else { return nil }
        return FleetManifest(counter: counter, items: items)
    }
}

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

    private var associatedData: [UInt8] { Array("vault fleet manifest".utf8) + groupID }

    /// `manifest` sealed: a random nonce, then its bytes encrypted and authenticated together with the
    /// group's id (a manifest copied from another group fails to open).
    func seal(_ manifest: FleetManifest) throws(StoreError) -> [UInt8] {
        guard manifest.items.count <= FleetManifest.maximumItemCount else {
            throw StoreError(
                .invalidName,
                "fleet group \(group) would hold \(manifest.items.count) items; a fleet group holds at most "
                    + "\(FleetManifest.maximumItemCount); nothing was changed")
        }
        return try seal(manifest.encoded(), associatedData: associatedData, what: "the manifest")
    }

    /// Opens a sealed manifest; `integrity` when it does not open under this group's key or is no
    /// manifest (replaced, or another group's).
    func open(_ sealed: [UInt8]) throws(StoreError) -> FleetManifest {
        try open(sealed, associatedData: associatedData, what: "its manifest", decode: FleetManifest.decode)
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
        do {
            return try KeyDerivation.keyedHash(
                contents, key: digestKey, domain: Self.digestDomain, outputByteCount: FleetManifest.digestByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot digest an item of fleet group \(group)")
        }
    }
}
