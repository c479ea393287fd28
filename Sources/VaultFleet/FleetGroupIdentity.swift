import Vault
import VaultCrypto
import VaultStore
import VaultSystem

/// Who a fleet group is, for its replica: its name, id, manifest key and settings.
struct FleetGroupIdentity: Sendable {
    /// The group's name.
    let group: GroupName
    /// The group's 16-byte id, the same on every machine.
    let groupID: [UInt8]
    /// Seals and opens the group's manifest.
    let manifestKey: FleetManifestKey
    /// How to reach the replica.
    let settings: FleetSettings
    /// The uid of the vault's owner, who wrote `settings`.
    let vaultOwnerID: UInt32

    /// The identity of fleet group `group` whose key is `key`, in a vault of `vaultOwnerID`.
    init(group: GroupName, key: ReplicatedGroupKey, settings: FleetSettings, vaultOwnerID: UInt32) throws(StoreError) {
        self.group = group
        groupID = key.groupID
        manifestKey = try FleetManifestKey(key: key, group: group)
        self.settings = settings
        self.vaultOwnerID = vaultOwnerID
    }

    static let checkDomain = KeyDerivation.Domain("vault.fchk.v2")

    /// The check value of a fleet group's key that its registration holds: a keyed hash of the group
    /// id under a key derived from its index key (the key itself never leaves the machine).
    static func check(of key: ReplicatedGroupKey) throws(StoreError) -> [UInt8] {
        do {
            return try KeyDerivation.keyedHash(key.groupID, key: key.indexKey, domain: checkDomain)
        } catch {
            throw StoreError.crypto(error, "cannot compute the check value of a fleet group's key")
        }
    }

    /// The first line of etcd password file `path` in secure memory (a regular file of at most 4 KiB that
    /// other users cannot read).
    /// A process other than the vault's owner (a member of a shared fleet group) takes it only when it
    /// is the owner's file: the owner wrote the settings that name it, and a file of anyone else's (the
    /// member's own credentials, a file the member may read through one of its groups) would go to the
    /// owner's endpoint as the password.
    func readPassword(_ path: String) throws(StoreError) -> SecureBytes {
        var (bytes, fileOwner, permissions) = try VaultStore.readOperatorFile(
            path, limit: 4096, what: "the etcd password file of fleet group \(group)")
        defer { bytes.wipe() }
        // Its owner's, and a shared fleet group's Unix group's (0640): never every user's.
        guard permissions.rawValue & 0o007 == 0 else {
            throw StoreError(
                .insecureFile,
                "\(path), the etcd password file of fleet group \(group), is open to every user (mode "
                    + "\(permissions)): `chmod o-rwx \(path)` (0600, or 0640 for a shared group's Unix group), and "
                    + "change the password if anyone else may have read it; nothing was sent",
                path: path)
        }
        if ProcessIdentity.effectiveUserID != vaultOwnerID, fileOwner != vaultOwnerID {
            throw StoreError(
                .insecureFile,
                "\(path), the etcd password file that fleet group \(group)'s settings name, belongs to uid "
                    + "\(fileOwner), not to the vault's owner (uid \(vaultOwnerID)): a member reads only the "
                    + "owner's (e.g. owner:UNIXGROUP 0640), and nothing was sent",
                path: path)
        }
        var line = Array(bytes.prefix { $0 != 10 })
        defer { line.wipe() }
        do {
            return try SecureBytes(copying: line)
        } catch {
            throw StoreError.crypto(error, "cannot hold the etcd password of fleet group \(group)")
        }
    }
}
