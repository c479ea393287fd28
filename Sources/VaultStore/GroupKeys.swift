import VaultCrypto

/// The keys of one access group, derived by keyed BLAKE2b with the group name as context: the index
/// key (item ids; from the `always` class key, so that an item can be found, and reported locked, in a
/// locked vault) and one encryption key per available class.
struct GroupKeys: Sendable {
    static let encryptionDomain = KeyDerivation.Domain("vault.grp.enc.v1")
    static let indexDomain = KeyDerivation.Domain("vault.grp.idx.v1")

    let index: SecureBytes
    private let encryption: [ProtectionClass: SecureBytes]

    init(classKeys: ClassKeys, group: GroupName) throws(StoreError) {
        let context = Array(group.rawValue.utf8)
        do {
            index = try KeyDerivation.subkey(of: classKeys.always, domain: Self.indexDomain, context: context)
            var keys: [ProtectionClass: SecureBytes] = [:]
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
    func encryption(_ protectionClass: ProtectionClass) -> SecureBytes? {
        encryption[protectionClass]
    }
}
