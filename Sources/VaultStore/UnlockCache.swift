import VaultCrypto
import VaultSystem

/// The unwrapped master key of a passphrase-protected vault, kept in the kernel keyring between
/// `vault unlock` and `vault lock` (or the timeout), so that other processes of the same user open the
/// vault without asking for the passphrase. Keyed by the vault id: one entry per vault.
enum UnlockCache {
    static func description(vaultID: [UInt8]) -> String {
        "vault:" + vaultID.map { String($0, radix: 16).leftPadded(2) }.joined() + ":master"
    }

    /// The vault id as the marker states it, before the marker is authenticated (the cached key is
    /// checked against the marker's tag before it is used).
    static func claimedVaultID(_ markerBytes: [UInt8]) -> [UInt8]? {
        guard markerBytes.count == VaultMarker.byteCount else { return nil }
        return Array(markerBytes[8..<VaultMarker.headerByteCount])
    }

    /// The cached key of the vault, if any. A keyring that cannot be used (a seccomp profile forbids
    /// it) counts as an empty cache here; `store` reports it.
    static func read(vaultID: [UInt8]) -> SecureBytes? {
        var length = 0
        let key = try? SecureBytes(count: MasterKeyFile.keyByteCount) { buffer in
            guard let n = try KernelKeyring.read(description: description(vaultID: vaultID), into: buffer) else {
                throw Errno.noSuchFileOrDirectory
            }
            length = n
        }
        guard let key, length == MasterKeyFile.keyByteCount else { return nil }
        return key
    }

    static func store(_ key: SecureBytes, vaultID: [UInt8], timeoutSeconds: UInt32, path: String) throws(StoreError) {
        do {
            try key.withUnsafeBytes { bytes throws(Errno) in
                try KernelKeyring.store(
                    bytes, description: description(vaultID: vaultID), timeoutSeconds: timeoutSeconds)
            }
        } catch {
            throw unavailable(error, path: path)
        }
    }

    static func remove(vaultID: [UInt8], path: String) throws(StoreError) -> Bool {
        do {
            return try KernelKeyring.remove(description: description(vaultID: vaultID))
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

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}

extension VaultStore {
    /// Unwraps the master key of the vault at `path` with `keySource`'s passphrase and caches it in the
    /// kernel keyring for `timeoutSeconds` (0: until reboot or until `lock`), so that other processes
    /// of this user open the vault without the passphrase.
    public static func unlock(at path: String, keySource: KeySource, timeoutSeconds: UInt32) throws(StoreError) {
        var source = keySource
        source.usesUnlockCache = false
        let store = try open(at: path, keySource: source)
        try UnlockCache.store(store.masterKey, vaultID: store.vaultID, timeoutSeconds: timeoutSeconds, path: path)
    }

    /// Drops the cached key of the vault at `path` from the kernel keyring; false when none was there.
    /// Processes that already opened the vault keep their key until they close it.
    public static func lock(at path: String) throws(StoreError) -> Bool {
        let directory = try VaultDirectory.open(path, creating: false)
        defer { try? directory.close() }
        let markerPath = path + "/" + VaultMarker.fileName
        let bytes = try VaultDirectory.readSmallFile(VaultMarker.fileName, in: directory, path: markerPath, limit: 4096)
        guard let vaultID = UnlockCache.claimedVaultID(bytes) else {
            throw StoreError(.integrity, "\(markerPath) is damaged", path: markerPath)
        }
        return try UnlockCache.remove(vaultID: vaultID, path: path)
    }
}
