import VaultCrypto

/// The two keys of one access group, derived from the master key by keyed BLAKE2b with the group name
/// as context: one encrypts the group's item files, the other names them (item ids).
struct GroupKeys: Sendable {
    static let encryptionDomain = KeyDerivation.Domain("vault.grp.enc.v1")
    static let indexDomain = KeyDerivation.Domain("vault.grp.idx.v1")

    let encryption: SecureBytes
    let index: SecureBytes

    init(masterKey: SecureBytes, group: GroupName) throws(StoreError) {
        let context = Array(group.rawValue.utf8)
        do {
            encryption = try KeyDerivation.subkey(of: masterKey, domain: Self.encryptionDomain, context: context)
            index = try KeyDerivation.subkey(of: masterKey, domain: Self.indexDomain, context: context)
        } catch {
            throw StoreError.crypto(error, "cannot derive the keys of group \(group)")
        }
    }
}
