import VaultCrypto
import VaultStore

/// Key rotation.
extension Vault {
    /// Rotates the master key: a new key (and class keys), every item re-encrypted, crash-safe at every
    /// step (`VaultStore.rekey`). Needs the master key (a vault opened with its passphrase or a key
    /// file); `newPassphrase` wraps the new key (nil: a plain `master.key`). Damaged items stop it
    /// before anything changes. This handle is stale afterwards: open the vault again.
    public func rekey(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = .fromEnvironment()
    ) throws(VaultError) {
        try translatingStoreErrors {
            try engine.store.rekey(newPassphrase: newPassphrase, limits: limits, keySource: keySource) { target in
                for name in try engine.store.groups() {
                    let group = AccessGroup(name)
                    let scanned = try engine.scan(group) { _ in true }
                    if let problem = scanned.locked ?? scanned.damage {
                        throw VaultError(problem.status, "cannot rekey: \(problem.message)", cause: problem)
                    }
                    for item in scanned.items {
                        var bytes = try ItemRecordCodec.encode(item.record)
                        defer { bytes.wipe() }
                        let id = try target.itemID(group: name, primaryKey: item.record.primaryKey)
                        try bytes.withUnsafeBytes {
                            try target.write(
                                group: name, id: id, plaintext: $0, protectionClass: item.record.protectionClass,
                                version: item.record.version)
                        }
                    }
                }
            }
        }
    }
}
