import VaultSystem

/// How a member of a shared group opens a vault: without `master.key`, through the vault
/// directory and `groups/` of another user (see FORMAT.md, "What a member opens").
extension VaultStore {
    /// The owner of the vault directory at `location` when this process would open it as a member: it
    /// is neither that owner nor root (root opens every vault as its owner, and the CLI takes the
    /// owner's identity first). Nil otherwise, or when the directory cannot be inspected (the owner's
    /// open then reports it). Who may open `master.key` does not decide it: a vault whose key is in an
    /// external key file has none, and its members open it all the same.
    static func memberOpenOwner(_ location: FilePath) -> UInt32? {
        let euid = ProcessIdentity.effectiveUserID
        guard euid != 0,
            let status = try? FileDescriptor.currentWorkingDirectory.statusAt(
                location.removingTrailingSeparators.string),
            status.ownerID != euid
        else { return nil }
        return status.ownerID
    }

    /// The vault opened as a member of its shared groups, when it is a vault of `owner` (the
    /// owner of its directory, not this process); nil otherwise: then the owner's open goes on, with
    /// the owner's checks, which refuse another user's vault by its directory's owner. The vault
    /// directory and `groups/` pass the checks of an owner's open with `owner` trusted as root is (the
    /// system vault's owner is root), so a member opens a vault of any user it is pointed at, whose
    /// shared directory (`<owner>:<Unix group>` 2770) only a member of that Unix group, or root, can
    /// have made. A member takes no vault-wide lock and leaves rekey recovery to the owner.
    static func openAsMember(
        _ location: FilePath, owner: UInt32, versions: ItemVersionReader?, replication: (any Replication)?
    )
        throws(StoreError) -> VaultStore?
    {
        // A refusal here (a symlink, a mode, a parent of a third user) holds for any open: reported as is.
        // A directory this process may not enter is no vault for members (no shared group made it
        // 0711): the owner's open says whose it is and how to run as them.
        let directory: FileDescriptor
        do {
            directory = try VaultDirectory.open(location, vaultOwner: owner)
        } catch  where error.errno == .permissionDenied {
            return nil
        }
        do throws(StoreError) {
            let markerPath = location / VaultMarker.fileName
            let markerBytes: [UInt8]?
            do {
                markerBytes = try readMarker(in: directory, path: markerPath)
            } catch  where error.errno == .permissionDenied {
                markerBytes = nil  // a format-1 VAULT is 0600: not a vault members may open
            }
            let marker = try markerBytes.map { (bytes) throws(StoreError) in
                try VaultMarker.unverified(bytes, path: markerPath)
            }
            guard let marker else {
                try? directory.close()
                return nil
            }
            if marker.version == FormatOneVault.version { throw FormatOneVault.needsUpgrade(location) }
            let groups = try VaultDirectory.openSubdirectory(
                groupsDirectoryName, in: directory, path: location / groupsDirectoryName, vaultOwner: owner)
            return VaultStore(
                location: location, vaultID: marker.vaultID, directory: directory, groupsDirectory: groups,
                lockFile: nil, classKeys: nil, versions: versions, replication: replication,
                versionsKeptSetting: marker.versionsKept)
        } catch {
            try? directory.close()
            throw error
        }
    }
}
