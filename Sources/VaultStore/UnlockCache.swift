import VaultCrypto
import VaultSystem

/// The unlocked class keys of a passphrase-protected vault, kept in the kernel keyring of the user
/// between `vault unlock` and `vault lock` (or the timeout), so that other processes of the same user
/// open the vault without the passphrase. Per vault (by id): the `afterFirstUnlock` key with no
/// timeout (it stays until reboot, as Apple's does), the `whenUnlocked` key with the unlock's timeout.
/// The master key itself is never cached.
enum UnlockCache {
    static func description(vaultID: [UInt8], _ protectionClass: ProtectionClass) -> String {
        let name = protectionClass == .whenUnlocked ? "wu" : "afu"
        return "vault:" + Hex.encode(vaultID) + ":" + name
    }

    /// The vault id as the marker states it, before the marker is authenticated (cached keys are only
    /// used to decrypt items, whose authentication binds them to this vault).
    static func claimedVaultID(_ markerBytes: [UInt8]) -> [UInt8]? {
        guard markerBytes.count == VaultMarker.byteCount else { return nil }
        return Array(markerBytes[8..<VaultMarker.headerByteCount])
    }

    /// The cached class keys of the vault. A keyring that cannot be used (a seccomp profile forbids
    /// it) counts as an empty cache here; `store` reports it.
    static func read(vaultID: [UInt8]) -> (afterFirstUnlock: SecureBytes?, whenUnlocked: SecureBytes?) {
        (read(description(vaultID: vaultID, .afterFirstUnlock)), read(description(vaultID: vaultID, .whenUnlocked)))
    }

    private static func read(_ description: String) -> SecureBytes? {
        var length = 0
        let key = try? SecureBytes(count: MasterKeyFile.keyByteCount) { buffer in
            guard let n = try KernelKeyring.read(description: description, into: buffer) else {
                throw Errno.noSuchFileOrDirectory
            }
            length = n
        }
        guard let key, length == MasterKeyFile.keyByteCount else { return nil }
        return key
    }

    static func store(
        _ key: SecureBytes, vaultID: [UInt8], _ protectionClass: ProtectionClass, timeoutSeconds: UInt32, path: String
    ) throws(StoreError) {
        do {
            try key.withUnsafeBytes { bytes throws(Errno) in
                try KernelKeyring.store(
                    bytes, description: description(vaultID: vaultID, protectionClass), timeoutSeconds: timeoutSeconds)
            }
        } catch {
            throw unavailable(error, path: path)
        }
    }

    static func remove(vaultID: [UInt8], _ protectionClass: ProtectionClass, path: String) throws(StoreError) -> Bool {
        do {
            return try KernelKeyring.remove(description: description(vaultID: vaultID, protectionClass))
        } catch {
            throw unavailable(error, path: path)
        }
    }

    /// Whether `description` names a cached class key of some vault: `vault:<32 hex digits>:afu` or
    /// `…:wu`, as `description(vaultID:_:)` makes them.
    static func isVaultKey(_ description: String) -> Bool {
        let parts = description.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "vault", parts[2] == "afu" || parts[2] == "wu" else { return false }
        return parts[1].utf8.count == 32 && parts[1].utf8.allSatisfy { Hex.value(ofDigit: $0) != nil }
    }

    /// Drops the cached class keys of every vault from the user keyring, both classes, whether or not
    /// their vault still exists (the keyring does not know; a removed vault's keys would otherwise stay
    /// until reboot, counted against the user's key quota). Returns how many were dropped.
    static func removeEveryVaultKey() throws(StoreError) -> Int {
        do {
            var removed = 0
            for entry in try KernelKeyring.userKeys() where entry.type == "user" && isVaultKey(entry.description) {
                if try KernelKeyring.remove(id: entry.id) { removed += 1 }
            }
            return removed
        } catch {
            throw unavailable(error, path: nil)
        }
    }

    private static func unavailable(_ error: Errno, path: String?) -> StoreError {
        if error == .diskQuotaExceeded {
            return StoreError(
                .io,
                "the kernel keyring quota of this user is full (\(error)): `vault lock --all` drops the keys of "
                    + "every vault (removed vaults too); root can raise /proc/sys/kernel/keys/maxkeys and maxbytes",
                path: path, cause: error)
        }
        guard let path else {
            return StoreError(
                .io,
                "the kernel keyring is not available (\(error)); a seccomp profile or container may forbid keyctl",
                cause: error)
        }
        return StoreError(
            .io,
            "the kernel keyring is not available (\(error)); a seccomp profile or container may forbid keyctl. "
                + "The vault at \(path) still opens with its passphrase in each process",
            path: path, cause: error)
    }
}

extension VaultStore {
    /// What `unlock` did.
    public enum UnlockOutcome: Sendable, Hashable {
        /// The class keys are cached.
        case unlocked
        /// The vault has no passphrase: its key is in a plain `master.key` or an external key file,
        /// which opens it for every process that can read that file. Nothing was cached.
        case noPassphrase
    }

    /// Unwraps the master key of the vault at `path` with `keySource`'s passphrase and caches the
    /// class keys in the kernel keyring: `afterFirstUnlock` until reboot, `whenUnlocked` for
    /// `timeoutSeconds` (0: until reboot or `lock`). Other processes of this user then open the vault
    /// without the passphrase. A vault without a passphrase has nothing to unlock: nothing is cached
    /// (its keys would only sit in the keyring, counted against the user's quota).
    @discardableResult
    public static func unlock(at path: String, keySource: KeySource, timeoutSeconds: UInt32) throws(StoreError)
        -> UnlockOutcome
    {
        var source = keySource
        source.usesUnlockCache = false
        let store = try open(at: path, keySource: source)
        guard source.keyFile == nil, store.isPassphraseProtected else { return .noPassphrase }
        guard let afterFirstUnlock = store.classKeys.afterFirstUnlock, let whenUnlocked = store.classKeys.whenUnlocked
        else {
            throw StoreError(.locked, "no passphrase was given to unlock the vault at \(path)", path: path)
        }
        try UnlockCache.store(
            afterFirstUnlock, vaultID: store.vaultID, .afterFirstUnlock, timeoutSeconds: 0, path: path)
        try UnlockCache.store(
            whenUnlocked, vaultID: store.vaultID, .whenUnlocked, timeoutSeconds: timeoutSeconds, path: path)
        return .unlocked
    }

    /// Drops the cached class keys of every vault of this user from the kernel keyring, `afterFirstUnlock`
    /// and `whenUnlocked` alike, including those of vaults that no longer exist; needs no vault.
    /// Returns how many keys were dropped. Processes that already opened a vault keep their keys until
    /// they close it.
    public static func lockEveryVault() throws(StoreError) -> Int {
        try UnlockCache.removeEveryVaultKey()
    }

    /// Drops the cached `whenUnlocked` key of the vault at `path` (the `afterFirstUnlock` key stays
    /// until reboot, as Apple's does); false when none was cached. Processes that already opened the
    /// vault keep their keys until they close it.
    public static func lock(at path: String) throws(StoreError) -> Bool {
        let directory = try VaultDirectory.open(path, creating: false)
        defer { try? directory.close() }
        let markerPath = path + "/" + VaultMarker.fileName
        let bytes = try VaultDirectory.readSmallFile(VaultMarker.fileName, in: directory, path: markerPath, limit: 4096)
        guard let vaultID = UnlockCache.claimedVaultID(bytes) else {
            throw StoreError(.integrity, "\(markerPath) is damaged", path: markerPath)
        }
        return try UnlockCache.remove(vaultID: vaultID, .whenUnlocked, path: path)
    }
}
