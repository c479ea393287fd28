import VaultSystem

/// The two checks that every directory and key file of the vault passes, ownership and mode, each
/// with its own refusal: whoever else owns a file, or may write it, can replace what the vault reads.
enum FileOwnership {
    /// `status` belongs to the effective user, or to root when `rootMayOwn`, or to `vaultOwner` (a
    /// member of a shared group opening a vault of another user trusts that user as it trusts root in
    /// the system vault: the one who can change the vault anyway); otherwise `refusal`, given the owner
    /// and the effective user, is the message of the `insecureFile` error.
    static func requireOwner(
        _ status: FileStatus, rootMayOwn: Bool, vaultOwner: UInt32? = nil, path: FilePath,
        _ refusal: (_ owner: UInt32, _ user: UInt32) -> String
    ) throws(StoreError) {
        let euid = ProcessIdentity.effectiveUserID
        if status.ownerID == euid || (rootMayOwn && status.ownerID == 0) { return }
        if let vaultOwner, status.ownerID == vaultOwner { return }
        throw StoreError(.insecureFile, refusal(status.ownerID, euid), path: path.string)
    }

    /// `status` has none of the bits of `forbidden`; otherwise `refusal`, given the mode, is the message.
    static func requireMode(
        _ status: FileStatus, without forbidden: FilePermissions, path: FilePath, _ refusal: (FilePermissions) -> String
    ) throws(StoreError) {
        if status.permissions.intersection(forbidden).isEmpty { return }
        throw StoreError(.insecureFile, refusal(status.permissions), path: path.string)
    }
}
