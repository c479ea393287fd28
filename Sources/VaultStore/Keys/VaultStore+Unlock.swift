import VaultSystem

/// What `VaultStore.unlock` did.
public enum UnlockOutcome: Sendable, Hashable {
    /// The class keys are cached.
    case unlocked
    /// The vault has no passphrase: its key is in a plain `master.key` or an external key file,
    /// which opens it for every process that can read that file. Nothing was cached.
    case noPassphrase
}

extension VaultStore {
    /// Unwraps the master key of the vault at `path` with `keySource`'s passphrase and caches the
    /// class keys in the kernel keyring: `afterFirstUnlock` until reboot, `whenUnlocked` for
    /// `timeoutSeconds` (0: until reboot or `lock`). Other processes of this user then open the vault
    /// without the passphrase. A vault without a passphrase has nothing to unlock: nothing is cached
    /// (its keys would only sit in the keyring, counted against the user's quota).
    @discardableResult
    package static func unlock(at path: String, keySource: KeySource, timeoutSeconds: UInt32) throws(StoreError)
        -> UnlockOutcome
    {
        var source = keySource
        source.usesUnlockCache = false
        let store = try open(at: path, keySource: source)
        guard source.keyFile == nil, store.isPassphraseProtected else { return .noPassphrase }
        let classKeys = try store.ownerClassKeys("unlock it")
        guard let afterFirstUnlock = classKeys.afterFirstUnlock, let whenUnlocked = classKeys.whenUnlocked
        else {
            throw StoreError(.locked, "no passphrase was given to unlock the vault at \(path)", path: path)
        }
        try UnlockCache.store(
            afterFirstUnlock, vaultID: store.vaultID, .afterFirstUnlock, timeoutSeconds: 0, path: store.location)
        try UnlockCache.store(
            whenUnlocked, vaultID: store.vaultID, .whenUnlocked, timeoutSeconds: timeoutSeconds, path: store.location)
        return .unlocked
    }

    /// Drops the cached class keys of every vault of this user from the kernel keyring, `afterFirstUnlock`
    /// and `whenUnlocked` alike, including those of vaults that no longer exist; needs no vault.
    /// Returns how many keys were dropped. Processes that already opened a vault keep their keys until
    /// they close it.
    package static func lockEveryVault() throws(StoreError) -> Int {
        try UnlockCache.removeEveryVaultKey()
    }

    /// Drops the cached `whenUnlocked` key of the vault at `path` (the `afterFirstUnlock` key stays
    /// until reboot, as Apple's does); false when none was cached. Processes that already opened the
    /// vault keep their keys until they close it.
    package static func lock(at path: String) throws(StoreError) -> Bool {
        let location = FilePath(path)
        let directory = try VaultDirectory.open(location)
        defer { try? directory.close() }
        let markerPath = location / VaultMarker.fileName
        let bytes = try SmallFile.read(
            VaultMarker.fileName, in: directory, path: markerPath, limit: VaultMarker.maximumReadByteCount)
        guard let vaultID = UnlockCache.claimedVaultID(bytes) else {
            throw StoreError(.integrity, "\(markerPath) is damaged", path: markerPath.string)
        }
        return try UnlockCache.remove(vaultID: vaultID, .whenUnlocked, path: location)
    }
}

extension VaultStore {
    /// Whether this store opened without the keys of `afterFirstUnlock` or `whenUnlocked` items (a
    /// passphrase vault that was not unlocked): such items say `locked` until it is opened again after
    /// `vault unlock`. A member holds no class keys and is never locked.
    package var isLocked: Bool {
        guard let classKeys else { return false }
        return classKeys.afterFirstUnlock == nil || classKeys.whenUnlocked == nil
    }
}
