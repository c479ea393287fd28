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
        /// The vault path, resolved before the switch (the default path depends on who asks).
        let vaultPath: String
        /// The external key, read as root, if one is configured.
        let key: SymmetricKey?
        /// The command's backup files that root opened (`RootOpenedFiles`).
        let files: RootOpenedFiles
    }

    /// Takes the identity of the owner of the command's vault when root runs it and a directory on the
    /// way to the vault (or the vault itself, or for one not made yet the nearest directory above it)
    /// belongs to another user; nil otherwise.
    static func actAsOwner(for command: Command, in context: Context) throws(CLIError) -> Switch? {
        guard ProcessIdentity.effectiveUserID == 0, touchesAVault(command) else { return nil }
        let creating: Bool
        if case .initialize = command { creating = true } else { creating = false }
        return try actAsOwner(ofVaultAt: try context.vaultPath(), creatingKey: creating, opening: command, in: context)
    }

    /// The same for the vault at `path` (the credential helpers' too); `command`'s backup files are
    /// opened as root first (`RootOpenedFiles`).
    static func actAsOwner(
        ofVaultAt path: String, creatingKey: Bool, opening command: Command? = nil, in context: Context
    ) throws(CLIError) -> Switch? {
        guard ProcessIdentity.effectiveUserID == 0 else { return nil }
        // Every component as written, links not followed: a user's symlink on the way (to a root-owned
        // vault, say) makes root act as that user, who cannot write what root's permissions protect.
        let owners = VaultLocation.owners(along: path)
        guard let owner = owners.first else { return nil }
        guard owners.count == 1 else {
            throw CLIError(
                .accessDenied, path,
                "the path to the vault crosses directories of more than one user (uids "
                    + owners.map(String.init).joined(separator: ", ") + "); vault will not act as either for root")
        }
        guard let user = UserDatabase.user(id: owner) else {
            throw CLIError(
                .accessDenied, path,
                "the vault belongs to uid \(owner), which is no user of this system (`getent passwd \(owner)` "
                    + "finds none): run vault as that uid, e.g. `setpriv --reuid=\(owner) --regid=GID "
                    + "--init-groups -- vault …`")
        }
        var key: SymmetricKey?
        let source = context.keySource()
        if source.keyFile != nil {
            do {
                key = try source.loadingExternalKey(creating: creatingKey).loadedKey
            } catch {
                throw CLIError(ExitCode(VaultError(error).status), path, error.description)
            }
        }
        let files = try command.map(RootOpenedFiles.open) ?? .none
        do {
            try ProcessIdentity.become(
                userID: owner, groupID: user.groupID, supplementaryGroups: UserDatabase.groupIDs(of: user))
        } catch {
            throw CLIError(
                .accessDenied, path, "cannot act as \(user.name) (uid \(owner)), the vault's owner: \(error)")
        }
        return Switch(vaultPath: path, key: key, files: files)
    }

    /// Whether the command opens, makes or changes a vault (help, version and completion do not).
    static func touchesAVault(_ command: Command) -> Bool {
        switch command {
        case .help, .manualPages, .version, .completion: return false
        default: return true
        }
    }
}
