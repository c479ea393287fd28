import VaultCrypto
import VaultStore

/// Key rotation, and the upgrade of a format-1 vault.
extension Vault {
    /// Rotates the master key: a new key, and every key file sealed again under it in place, items and
    /// directories as they are; crash-safe at every step (`VaultStore.rekey`). Needs the master key (a
    /// vault opened with its passphrase); `newPassphrase` wraps the new key (nil: a plain
    /// `master.key`). A vault whose key is in an external key file is rekeyed with
    /// `rekey(newKeyFile:keySource:)`. A `group.key` that does not open stops it before anything
    /// changes. This handle is stale afterwards (it writes no key file any more): open the vault again.
    public func rekey(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = .fromEnvironment()
    ) throws(VaultError) {
        try translatingStoreErrors { () throws(StoreError) in
            try engine.store.rekey(newPassphrase: newPassphrase, limits: limits, keySource: keySource)
        }
    }

    /// Rotates the master key of a vault opened with an external key file (`keySource.keyFile`): the
    /// new key goes to `newKeyFile`, created (0600, exclusively, durably, in an existing directory)
    /// when it does not exist, else taken from the 32-byte key file there (refused when group or others
    /// can read it). Crash-safe like the other rekey: after a failure at any step the vault opens with
    /// the old key file or the new one, with every item. Afterwards only the new key file opens it;
    /// the old file is left in place. This handle is stale afterwards: open the vault again.
    public func rekey(newKeyFile: String, keySource: KeySource = .fromEnvironment()) throws(VaultError) {
        try translatingStoreErrors { () throws(StoreError) in
            try engine.store.rekey(newKeyFile: newKeyFile, keySource: keySource)
        }
    }

    /// Converts the format-1 vault at `path` to the current format (a key per group), crash-safe: after
    /// a failure at any step the vault opens as format 1 or as the current format, with every item.
    /// The master key stays where it is. A damaged item stops it before anything changes. Returns
    /// false when the vault is current already. `open` runs it.
    static func upgrade(at path: String, keySource: KeySource) throws(VaultError) -> Bool {
        try translatingStoreErrors { () throws(StoreError) -> Bool in
            try VaultStore.upgrade(at: path, keySource: keySource) { plaintext in
                (try? ItemRecordCodec.decode(plaintext, cache: nil)).map { ($0.version, $0.primaryKey) }
            }
        }
    }
}
