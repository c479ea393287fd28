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

    private static func unavailable(_ error: Errno, path: String) -> StoreError {
        StoreError(
            .io,
            "the kernel keyring is not available (\(error)); a seccomp profile or container may forbid keyctl. "
                + "The vault at \(path) still opens with its passphrase in each process",
            path: path, cause: error)
    }
}

extension VaultStore {
    /// Unwraps the master key of the vault at `path` with `keySource`'s passphrase and caches the
    /// class keys in the kernel keyring: `afterFirstUnlock` until reboot, `whenUnlocked` for
    /// `timeoutSeconds` (0: until reboot or `lock`). Other processes of this user then open the vault
    /// without the passphrase.
    public static func unlock(at path: String, keySource: KeySource, timeoutSeconds: UInt32) throws(StoreError) {
        var source = keySource
        source.usesUnlockCache = false
        let store = try open(at: path, keySource: source)
        guard let afterFirstUnlock = store.classKeys.afterFirstUnlock, let whenUnlocked = store.classKeys.whenUnlocked
        else {
            throw StoreError(.locked, "no passphrase was given to unlock the vault at \(path)", path: path)
        }
        try UnlockCache.store(
            afterFirstUnlock, vaultID: store.vaultID, .afterFirstUnlock, timeoutSeconds: 0, path: path)
        try UnlockCache.store(
            whenUnlocked, vaultID: store.vaultID, .whenUnlocked, timeoutSeconds: timeoutSeconds, path: path)
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
