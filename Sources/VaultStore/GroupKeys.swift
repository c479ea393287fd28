import VaultCrypto

/// The keys of one access group, derived by keyed BLAKE2b with the group name as context: the index
/// key (item ids; from the `always` class key, so that an item can be found, and reported locked, in a
/// locked vault) and one encryption key per available class.
struct GroupKeys: Sendable {
    static let encryptionDomain = KeyDerivation.Domain("vault.grp.enc.v1")
    static let indexDomain = KeyDerivation.Domain("vault.grp.idx.v1")

    let index: SymmetricKey
    private let encryption: [ProtectionClass: SymmetricKey]

    init(classKeys: ClassKeys, group: GroupName) throws(StoreError) {
        let context = Array(group.rawValue.utf8)
        do {
            index = try KeyDerivation.subkey(of: classKeys.always, domain: Self.indexDomain, context: context)
            var keys: [ProtectionClass: SymmetricKey] = [:]
            for protectionClass in ProtectionClass.allCases {
                guard let classKey = classKeys.key(protectionClass) else { continue }
                keys[protectionClass] = try KeyDerivation.subkey(
                    of: classKey, domain: Self.encryptionDomain, context: context)
            }
            encryption = keys
        } catch {
            throw StoreError.crypto(error, "cannot derive the keys of group \(group)")
        }
    }

    /// The encryption key of `protectionClass`, or nil when the vault is locked for that class.
    func encryption(_ protectionClass: ProtectionClass) -> SymmetricKey? {
        encryption[protectionClass]
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
