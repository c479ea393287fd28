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

    /// The cached class keys of the vault, read into one secure allocation (they live as long as each
    /// other: a store's class keys). A keyring that cannot be used (a seccomp profile forbids it)
    /// counts as an empty cache here; `store` reports it.
    static func read(vaultID: [UInt8]) -> (afterFirstUnlock: SymmetricKey?, whenUnlocked: SymmetricKey?) {
        let size = SymmetricKey.byteCount
        var lengths: [Int?] = [nil, nil]
        let both = try? SecureBytes(count: 2 * size) { (span) throws(Never) in
            for (index, protectionClass) in [ProtectionClass.afterFirstUnlock, .whenUnlocked].enumerated() {
                // Each on its own: a key that cannot be read leaves the other.
                lengths[index] = try? KernelKeyring.read(
                    description: description(vaultID: vaultID, protectionClass), into: &span,
                    range: (index * size)..<((index + 1) * size))
            }
        }
        guard let halves = both?.split(into: size) else { return (nil, nil) }
        func key(_ index: Int) -> SymmetricKey? {
            lengths[index] == size ? try? SymmetricKey(halves[index]) : nil
        }
        return (key(0), key(1))
    }

    static func store(
        _ key: SymmetricKey, vaultID: [UInt8], _ protectionClass: ProtectionClass, timeoutSeconds: UInt32,
        path: FilePath
    ) throws(StoreError) {
        do {
            try key.bytes.withSpan { (bytes) throws(Errno) in
                try KernelKeyring.store(
                    bytes, description: description(vaultID: vaultID, protectionClass), timeoutSeconds: timeoutSeconds)
            }
        } catch {
            throw unavailable(error, path: path)
        }
    }

    static func remove(vaultID: [UInt8], _ protectionClass: ProtectionClass, path: FilePath) throws(StoreError)
        -> Bool
    {
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

    private static func unavailable(_ error: Errno, path: FilePath?) -> StoreError {
        let cause = SystemCallError(systemCall: .keyring, errno: error)
        if error == .diskQuotaExceeded {
            return StoreError(
                .io,
                "the kernel keyring quota of this user is full (\(error)): `vault lock --all` drops the keys of "
                    + "every vault (removed vaults too); root can raise /proc/sys/kernel/keys/maxkeys and maxbytes",
                path: path?.string, cause: cause)
        }
        guard let path else {
            return StoreError(
                .io,
                "the kernel keyring is not available (\(error)); a seccomp profile or container may forbid keyctl",
                cause: cause)
        }
        return StoreError(
            .io,
            "the kernel keyring is not available (\(error)); a seccomp profile or container may forbid keyctl. "
                + "The vault at \(path) still opens with its passphrase in each process",
            path: path.string, cause: cause)
    }
}
