import VaultCrypto
import VaultSystem

/// The secrets of one access group: an index key for item ids and generation records,
/// which never changes, and one or two encryption keys by generation (two while a rotation runs).
struct GroupSecrets: Sendable {
    let indexKey: SymmetricKey
    /// Ascending by generation.
    let keys: [(generation: UInt32, key: SymmetricKey)]
    /// The generation new items are written under.
    let currentGeneration: UInt32

    /// A new group's secrets: random keys, generation 1.
    static func random() throws(StoreError) -> GroupSecrets {
        do {
            return GroupSecrets(
                indexKey: try SymmetricKey.random(), keys: [(1, try SymmetricKey.random())], currentGeneration: 1)
        } catch {
            throw StoreError.crypto(error, "cannot make a group key")
        }
    }

    /// The key of `generation`, if this group holds it.
    func key(generation: UInt32) -> SymmetricKey? {
        keys.first { $0.generation == generation }?.key
    }

    /// The index key and the encryption keys, one after the other: what `group.key` seals.
    func joined() throws(StoreError) -> SecureBytes {
        do {
            return try SecureBytes.joined([indexKey.bytes] + keys.map(\.key.bytes))
        } catch {
            throw StoreError.crypto(error, "cannot assemble a group key")
        }
    }
}

/// `groups/<group>/group.key`: the group's id and secrets, for the vault's owner sealed
/// under a key derived from the `always` class key, and for a shared group also in the clear (the
/// file's mode and owner keep them to the members of one Unix group) with a MAC that a member checks:
///
///     header = "VLTG" | version u8 (1) | flags u8 (bit 0: shared, bit 1: fleet) | reserved u8 (0)
///              | count u8 (1 or 2)
///              | group id (16) | current generation u32be | count × generation u32be
///     owner  = nonce (24) | AEAD(seal key, index key | count × key, ad = header | binding)
///     member = index key | count × key | MAC   (shared groups only)
///     MAC    = keyed BLAKE2b-256 under a subkey of the index key, over header | owner | secrets | binding
///     binding = len16be(group name) | group name | vault id (none for a fleet group)
///
/// The binding makes a file copied into another group or vault fail both checks; a fleet group's
/// secrets are the same on every machine that joined it, so its binding leaves the vault out.
struct GroupKeyFile: Sendable {
    static let fileName = "group.key"
    static let magic: [UInt8] = Array("VLTG".utf8)
    static let version: UInt8 = 1
    static let groupIDByteCount = 16
    static let maximumByteCount = 4096
    static let sealDomain = KeyDerivation.Domain("vault.gseal.v2")
    static let macDomain = KeyDerivation.Domain("vault.gmac.v2")
    static let macKeyDomain = KeyDerivation.Domain("vault.gmkey.v2")

    let groupID: [UInt8]
    let isShared: Bool
    let secrets: GroupSecrets
    /// A fleet group's: its items are replicated to other machines (`Replication`).
    var isFleet = false

    /// The owner's seal key of the group with `groupID`: from the `always` class key, which every
    /// opener of the owner's has, locked or not.
    static func sealKey(always: SymmetricKey, groupID: [UInt8]) throws(StoreError) -> SymmetricKey {
        do {
            return try KeyDerivation.subkey(sealing(always: always, groupID: groupID))
        } catch {
            throw StoreError.crypto(error, "cannot derive a group's seal key")
        }
    }

    /// How `sealKey(always:groupID:)` is derived.
    private static func sealing(always: SymmetricKey, groupID: [UInt8]) -> KeyDerivation.Derivation {
        KeyDerivation.Derivation(of: always, domain: sealDomain, context: groupID)
    }

    static func binding(group: GroupName, vaultID: [UInt8]) -> [UInt8] {
        var binding: [UInt8] = []
        group.appendLengthPrefixed(to: &binding)
        return binding + vaultID
    }

    func header() -> [UInt8] {
        let flags: UInt8 = (isShared ? 1 : 0) | (isFleet ? 2 : 0)
        var header = Self.magic + [Self.version, flags, 0, UInt8(secrets.keys.count)] + groupID
        header.appendBigEndian(secrets.currentGeneration)
        for (generation, _) in secrets.keys { header.appendBigEndian(generation) }
        return header
    }

    /// The file's bytes (secret: a shared group's keys are in them).
    func encoded(group: GroupName, vaultID: [UInt8], sealKey: SymmetricKey) throws(StoreError) -> SecureBytes {
        let header = header()
        let binding = Self.binding(group: group, vaultID: isFleet ? [] : vaultID)
        let payload = try secrets.joined()
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            let owner =
                nonce
                + (try XChaCha20Poly1305.seal(payload, key: sealKey, nonce: nonce, associatedData: header + binding))
            guard isShared else { return try SecureBytes(copying: header + owner) }
            let mac = try Self.mac(
                header + owner, payload, binding: binding, indexKey: secrets.indexKey, groupID: groupID)
            return try SecureBytes.joined([
                try SecureBytes(copying: header + owner), payload, try SecureBytes(copying: mac),
            ])
        } catch {
            throw StoreError.crypto(error, "cannot seal the key of group \(group)")
        }
    }

    /// The fields before the secrets, checked without a key.
    private struct Layout {
        let groupID: [UInt8]
        let isShared: Bool
        let isFleet: Bool
        let currentGeneration: UInt32
        let generations: [UInt32]
        let headerCount: Int
        var payloadCount: Int { SymmetricKey.byteCount * (generations.count + 1) }
        var ownerCount: Int { XChaCha20Poly1305.nonceByteCount + payloadCount + XChaCha20Poly1305.tagByteCount }
        var fileCount: Int { headerCount + ownerCount + (isShared ? payloadCount + 32 : 0) }
    }

    private static func layout(_ bytes: [UInt8], path: FilePath) throws(StoreError) -> Layout {
        let damaged = StoreError(
            .integrity, "\(path) is not a group key file, or it is damaged (\(bytes.count) bytes)", path: path.string)
        guard bytes.count >= 28, Array(bytes[0..<4]) == magic else { throw damaged }
        guard bytes[4] == version else {
            throw StoreError(
                .unsupportedFormat,
                "\(path) has group key format \(bytes[4]); this build reads version \(version)", path: path.string)
        }
        let count = Int(bytes[7])
        guard bytes[5] & ~3 == 0, bytes[6] == 0, (1...2).contains(count), bytes.count >= 28 + 4 * count else {
            throw damaged
        }
        let generations = (0..<count).map { UInt32(bigEndianBytes: bytes[(28 + 4 * $0)..<(32 + 4 * $0)]) }
        let current = UInt32(bigEndianBytes: bytes[24..<28])
        guard generations.contains(current), zip(generations, generations.dropFirst()).allSatisfy({ $0 < $1 }) else {
            throw damaged
        }
        let layout = Layout(
            groupID: Array(bytes[8..<24]), isShared: bytes[5] & 1 == 1, isFleet: bytes[5] & 2 == 2,
            currentGeneration: current,
            generations: generations, headerCount: 28 + 4 * count)
        guard bytes.count == layout.fileCount else { throw damaged }
        return layout
    }

    /// What the file says without a key: the group id and whether it is shared (for listings and for
    /// choosing how to open it).
    static func peek(_ bytes: [UInt8], path: FilePath) throws(StoreError) -> (groupID: [UInt8], isShared: Bool) {
        let layout = try layout(bytes, path: path)
        return (layout.groupID, layout.isShared)
    }

    /// Opens the file as the vault's owner: the sealed part under `sealKey(always:groupID:)`.
    static func decodeAsOwner(
        _ bytes: [UInt8], group: GroupName, vaultID: [UInt8], always: SymmetricKey, path: FilePath
    ) throws(StoreError) -> GroupKeyFile {
        let layout = try layout(bytes, path: path)
        let header = Array(bytes[0..<layout.headerCount])
        let nonceEnd = layout.headerCount + XChaCha20Poly1305.nonceByteCount
        let payload: SecureBytes
        do {
            // The seal key and the secrets in one secure allocation.
            payload = try XChaCha20Poly1305.openSecrets([
                XChaCha20Poly1305.SealedSecret(
                    ciphertext: bytes[nonceEnd..<(layout.headerCount + layout.ownerCount)],
                    nonce: bytes[layout.headerCount..<nonceEnd],
                    associatedData: header + binding(group: group, vaultID: layout.isFleet ? [] : vaultID),
                    sealedUnder: sealing(always: always, groupID: layout.groupID))
            ])[0]
        } catch  where error.error.code == .authenticationFailed {
            throw StoreError(
                .integrity,
                "\(path) failed authentication: it is damaged, belongs to another group or vault, or was sealed under "
                    + "another master key", path: path.string, cause: error.error)
        } catch {
            throw StoreError.crypto(error.error, "cannot open \(path)")
        }
        return GroupKeyFile(
            groupID: layout.groupID, isShared: layout.isShared,
            secrets: try secrets(payload, layout: layout, path: path), isFleet: layout.isFleet)
    }

    /// Opens a shared group's file as a member: the keys in the clear, checked against the MAC.
    static func decodeAsMember(_ bytes: [UInt8], group: GroupName, vaultID: [UInt8], path: FilePath)
        throws(StoreError) -> GroupKeyFile
    {
        let layout = try layout(bytes, path: path)
        guard layout.isShared else {
            throw StoreError(
                .integrity, "\(path) is the key of a private group and holds no key for members", path: path.string)
        }
        let secretsStart = layout.headerCount + layout.ownerCount
        let macStart = secretsStart + layout.payloadCount
        let file: GroupKeyFile
        do {
            var plain = Array(bytes[secretsStart..<macStart])
            let payload = try SecureBytes(consuming: &plain)
            file = GroupKeyFile(
                groupID: layout.groupID, isShared: true, secrets: try secrets(payload, layout: layout, path: path),
                isFleet: layout.isFleet)
            let expected = try mac(
                Array(bytes[0..<secretsStart]), payload,
                binding: binding(group: group, vaultID: layout.isFleet ? [] : vaultID),
                indexKey: file.secrets.indexKey, groupID: layout.groupID)
            guard ConstantTime.equals(expected, Array(bytes[macStart...])) else {
                throw StoreError(
                    .integrity,
                    "\(path) failed its check: it is damaged or belongs to another group or vault", path: path.string)
            }
        } catch let error as StoreError {
            throw error
        } catch let error as CryptoError {
            throw StoreError.crypto(error, "cannot check \(path)")
        } catch {
            throw StoreError(.integrity, "cannot check \(path): \(error)", path: path.string)
        }
        return file
    }

    private static func secrets(_ payload: SecureBytes, layout: Layout, path: FilePath) throws(StoreError)
        -> GroupSecrets
    {
        // Views of the payload's allocation, which lives while any of them does: the index key that a
        // group's cached `GroupKeys` hold keeps the group keys' bytes too (secure memory, and nothing the
        // keys derived from them do not already give).
        let parts = payload.split(into: SymmetricKey.byteCount)
        do {
            let index = try SymmetricKey(parts[0])
            var keys: [(generation: UInt32, key: SymmetricKey)] = []
            for (offset, generation) in layout.generations.enumerated() {
                keys.append((generation, try SymmetricKey(parts[offset + 1])))
            }
            return GroupSecrets(indexKey: index, keys: keys, currentGeneration: layout.currentGeneration)
        } catch {
            throw StoreError.crypto(error, "cannot read the keys of \(path)")
        }
    }

    /// The members' MAC: over `sealedPart` (header and owner part), the secrets and the binding,
    /// under a subkey of the index key (made with the message in one secure allocation).
    private static func mac(
        _ sealedPart: [UInt8], _ payload: SecureBytes, binding: [UInt8], indexKey: SymmetricKey, groupID: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try KeyDerivation.keyedHash(
            [.plain(sealedPart), .secret(payload), .plain(binding)],
            keyedBy: KeyDerivation.Derivation(of: indexKey, domain: macKeyDomain, context: groupID), domain: macDomain)
    }
}
