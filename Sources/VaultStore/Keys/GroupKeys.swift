import VaultCrypto

/// The keys of one access group as the item path uses them: the index key (item ids, generation
/// records), the encryption key of each class and key generation this process may use, and what
/// item files and records are bound to (the group's own id).
///
/// They come from the group's own secrets (`GroupKeyFile`); a private group's encryption keys also
/// need the class key (so it still locks), a shared group's do not (every class behaves as `always`).
///
/// A class, not a struct: every read looks a group's keys up and hands them on, and a struct's copy
/// retained and released each of its keys and arrays.
final class GroupKeys: Sendable {
    static let encryptionDomainV2 = KeyDerivation.Domain("vault.grp.enc.v2")

    struct Slot: Hashable {
        let protectionClass: ProtectionClass
        let generation: UInt32
    }

    let index: SymmetricKey
    /// The bytes item files and generation records of this group are bound to.
    let binding: [UInt8]
    /// The generation new items are written under.
    let currentGeneration: UInt32
    /// Whether the group's key is kept for the members of a Unix group.
    let isShared: Bool
    /// Whether the group is a fleet group (its `group.key` says so; its items are replicated to other machines).
    let isFleet: Bool
    private let encryption: [Slot: SymmetricKey]

    /// From the group's key file; `classKeys` are the owner's item class keys
    /// (`ItemClassKeyFile`; nil for a member, who can only open a shared group).
    init(file: GroupKeyFile, classKeys: ClassKeys?, group: GroupName) throws(StoreError) {
        index = file.secrets.indexKey
        binding = file.groupID
        currentGeneration = file.secrets.currentGeneration
        isShared = file.isShared
        isFleet = file.isFleet
        var keys: [Slot: SymmetricKey] = [:]
        do {
            // Every generation's keys in one secure allocation (`KeyDerivation.subkeys`).
            var slots: [[Slot]] = []
            var derivations: [KeyDerivation.Derivation] = []
            for (generation, groupKey) in file.secrets.keys {
                // A fleet group's items open on every machine that joined it: its keys come from the group
                // key alone (no machine's class keys), as a shared group's do.
                if file.isShared || file.isFleet {
                    derivations.append(
                        KeyDerivation.Derivation(of: groupKey, domain: Self.encryptionDomainV2, context: file.groupID))
                    slots.append(ProtectionClass.allCases.map { Slot(protectionClass: $0, generation: generation) })
                    continue
                }
                for protectionClass in ProtectionClass.allCases {
                    guard let classKey = classKeys?.key(protectionClass) else { continue }
                    derivations.append(
                        KeyDerivation.Derivation(
                            of: classKey, domain: Self.encryptionDomainV2,
                            context: file.groupID + [protectionClass.rawValue], mixing: groupKey))
                    slots.append([Slot(protectionClass: protectionClass, generation: generation)])
                }
            }
            for (key, slots) in zip(try KeyDerivation.subkeys(derivations), slots) {
                for slot in slots { keys[slot] = key }
            }
        } catch {
            throw StoreError.crypto(error, "cannot derive the keys of group \(group)")
        }
        encryption = keys
    }

    /// A private group that does not exist yet: its index key only (item ids can be
    /// computed; there is nothing to read and no key to write with).
    init(absentPrivateGroupWithIndex index: SymmetricKey) {
        self.index = index
        binding = []
        currentGeneration = 0
        isShared = false
        isFleet = false
        encryption = [:]
    }

    /// Whether these are the keys of a group that does not exist yet (not to be cached).
    var isAbsent: Bool { binding.isEmpty }

    /// The encryption key of `protectionClass` under key `generation`, or nil when this process lacks it
    /// (a locked class, or a generation the group no longer holds).
    func encryption(_ protectionClass: ProtectionClass, generation: UInt32) -> SymmetricKey? {
        encryption[Slot(protectionClass: protectionClass, generation: generation)]
    }

    /// The id of the item whose canonical primary key is `primaryKey`: a keyed BLAKE2b under the index
    /// key, so names reveal nothing and differ between groups.
    func itemID(_ primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        do {
            let hash = try KeyDerivation.keyedHash(
                primaryKey, key: index, domain: Self.itemIDDomain, outputByteCount: ItemID.hashByteCount)
            return ItemID(hash: hash)
        } catch {
            throw StoreError.crypto(error, "cannot compute an item id")
        }
    }

    static let itemIDDomain = KeyDerivation.Domain("vault.item-id.v1")
}
