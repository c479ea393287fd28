import Vault
import VaultCrypto
import VaultStore
import VaultSystem

/// Root acting on a vault that belongs to another user (a service's, provisioned by an operator) acts
/// as that user: it takes the owner's uid and groups before it opens anything of the vault, so every
/// file it leaves is the owner's (a root-owned 0600 item would be unreadable to the service) and a
/// hostile owner cannot race it into writing or deleting outside the vault. An external key file is
/// read (or, for `init`, created) first, as root: it is often root's (`/etc/vault/vault.key`, handed to
/// the service as a systemd credential), which the owner cannot read.
enum VaultOwner {
    /// What acting as the owner brought along.
    struct Switch {
        /// The owner's user id.
        let userID: UInt32
        /// The external key, read as root, if one is configured.
        let key: SecureBytes?
    }

    /// Takes the identity of the owner of the command's vault when root runs it and the vault (or for
    /// a vault not made yet, the nearest directory above it) belongs to another user; nil otherwise.
    static func actAsOwner(for command: Command, in context: Context) throws(CLIError) -> Switch? {
        guard ProcessIdentity.effectiveUserID == 0, touchesAVault(command) else { return nil }
        let path = try context.vaultPath()
        guard let (owner, directoryGroup) = VaultLocation.owner(of: path), owner != 0 else { return nil }
        var key: SecureBytes?
        let source = context.keySource()
        if source.keyFile != nil {
            let creating: Bool
            if case .initialize = command { creating = true } else { creating = false }
            do {
                key = try source.loadingExternalKey(creating: creating).loadedKey
            } catch {
                throw CLIError(ExitCode(VaultError(error).status), path, error.description)
            }
        }
        let user = UserDatabase.user(id: owner)
        // A uid that /etc/passwd does not list (a directory service's): its directory's group.
        let groupID = user?.groupID ?? directoryGroup
        let groups = user.map { UserDatabase.groupIDs(of: $0) } ?? [groupID]
        do {
            try ProcessIdentity.become(userID: owner, groupID: groupID, supplementaryGroups: groups)
        } catch {
            throw CLIError(.accessDenied, path, "cannot act as uid \(owner), the owner of the vault: \(error)")
        }
        return Switch(userID: owner, key: key)
    }

    /// Whether the command opens, makes or changes a vault (help, version and completion do not).
    static func touchesAVault(_ command: Command) -> Bool {
        switch command {
        case .help, .manualPages, .version, .completion: return false
        default: return true
        }
    }
}
