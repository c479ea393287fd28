import VaultCrypto
import VaultStore

/// Key rotation.
extension Vault {
    /// Rotates the master key: a new key (and class keys), crash-safe at every step
    /// (`VaultStore.rekey`). Format 1 re-encrypts every item; format 2 seals every key file again in
    /// place and leaves items and directories as they are. Needs the master key (a vault opened with its passphrase);
    /// `newPassphrase` wraps the new key (nil: a plain `master.key`). A vault whose key is in an
    /// external key file is rekeyed with `rekey(newKeyFile:keySource:)`. In format 1, damaged items
    /// stop it before anything changes; in format 2 a `group.key` that does not open does. This handle
    /// is stale afterwards (it writes no key file any more): open the vault again.
    public func rekey(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = .fromEnvironment()
    ) throws(VaultError) {
        try engine.store.rekey(newPassphrase: newPassphrase, limits: limits, keySource: keySource) {
            (target) throws(VaultError) in try copyItems(into: target)
        }
    }

    /// Rotates the master key of a vault opened with an external key file (`keySource.keyFile`): the
    /// new key goes to `newKeyFile`, created (0600, exclusively, durably, in an existing directory)
    /// when it does not exist, else taken from the 32-byte key file there (refused when group or others
    /// can read it). Crash-safe like the other rekey: after a failure at any step the vault opens with
    /// the old key file or the new one, with every item. Afterwards only the new key file opens it;
    /// the old file is left in place. This handle is stale afterwards: open the vault again.
    public func rekey(newKeyFile: String, keySource: KeySource = .fromEnvironment()) throws(VaultError) {
        try engine.store.rekey(newKeyFile: newKeyFile, keySource: keySource) { (target) throws(VaultError) in
            try copyItems(into: target)
        }
    }

    /// Converts a format-1 vault to format 2 (a key per group, shared groups possible), crash-safe as
    /// a rekey: after a failure at any step the vault opens as format 1 or as format 2, with every
    /// item. The master key stays where it is. Damaged items stop it before anything changes; a vault
    /// that is format 2 already is `duplicateVault`. This handle is stale afterwards: open the vault
    /// again.
    public func upgrade(keySource: KeySource = .fromEnvironment()) throws(VaultError) {
        try engine.store.upgrade(keySource: keySource) { (target) throws(VaultError) in
            try copyItems(into: target, operation: "upgrade")
        }
    }

    /// Writes every item, decrypted with the old keys, into the rekey's new vault.
    private func copyItems(into target: RekeyTarget, operation: String = "rekey") throws(VaultError) {
        for name in try translatingStoreErrors({ () throws(StoreError) in try engine.store.groups() }) {
            let group = AccessGroup(name)
            let scanned = try engine.scan(group) { _ in true }
            if let locked = scanned.locked {
                throw VaultError(locked.status, "cannot \(operation): \(locked.message)", cause: locked)
            }
            if let damage = scanned.damage {
                throw VaultError(
                    damage.status,
                    "cannot \(operation): \(damage.message) (`vault check --remove-damaged` removes damaged files)",
                    cause: damage)
            }
            for item in scanned.items {
                try engine.encoded(item.record, group: group) { (bytes) throws(VaultError) in
                    try translatingStoreErrors { () throws(StoreError) in
                        let id = try target.itemID(group: name, primaryKey: item.record.primaryKey)
                        try target.write(
                            bytes, to: ItemLocation(group: name, id: id), protectionClass: item.record.protectionClass,
                            version: item.record.version)
                    }
                }
            }
        }
    }
}
