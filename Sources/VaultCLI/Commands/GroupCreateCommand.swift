import FoundationEssentials
import Vault
import VaultSystem

/// `vault group create NAME [--unix-group UNIXGROUP]`: makes an access group of the vault,
/// private to the vault's owner or shared with the members of a Unix group.
package struct GroupCreateCommand: Sendable, Hashable {
    /// The group to make.
    package var group: AccessGroup
    /// `--unix-group`: the Unix group to share it with, as given (a name or a numeric gid).
    package var unixGroup: String?
    /// `--etcd …`: a fleet group, its items in this etcd cluster.
    package var fleet: FleetSettings?

    static let info = CommandInfo(
        name: "create",
        synopsis: "vault group create NAME [--unix-group UNIXGROUP] [--etcd URL[,URL…] [etcd options]]",
        summary: "make an access group, private or shared with a Unix group",
        details: """
            Makes access group NAME in the vault: private to the vault's owner, or with
            --unix-group shared with the members of UNIXGROUP, a group name the system knows (from
            /etc/group, LDAP, SSSD or any NSS source, as `getent group` finds it) or a numeric gid.
            Run it as the vault's owner. For a shared group the owner must be a member of UNIXGROUP as
            well, because the kernel lets only root and a group's members give a directory to that
            group (root on another user's vault acts as that user). Members reach the group through the
            vault directory and groups/, which become 0711. Says on standard error what it made, and
            how members use it. An existing group is exit status 3. With --etcd, NAME is a fleet
            group: its items live in that etcd cluster, encrypted here (etcd sees ciphertext and hashed
            ids only), and every machine that joins it (`vault group export-key`, then `vault group join`
            there) reads and writes the same items; with --unix-group as well it is shared on this
            machine with UNIXGROUP's members as a local group would be (they need read access to the
            files the etcd options name). …ThisDeviceOnly items cannot go into a fleet group. Fleet
            commands run in `vault-fleet`, the dynamically linked companion of this static executable,
            which `vault` starts by itself.
            """,
        options: [
            .value(
                "unix-group", "UNIXGROUP",
                "share the group with the members of this Unix group (a name or a numeric gid)")
        ] + FleetOptions.specs,
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            let fleet = try FleetOptions.settings(parsed, command: "group create")
            return .groupCreate(
                GroupCreateCommand(
                    group: try GroupCommand.group(parsed, command: "group create"),
                    unixGroup: parsed.value("unix-group"), fleet: fleet))
        })

    func run(in context: Context) throws(CLIError) {
        // Before the vault is opened: a name that does not resolve is a usage error and changes nothing.
        let shared = try Self.resolve(unixGroup)
        let vault = try context.openVault()
        if let shared, !vault.isMember {
            try Self.checkMembership(shared, vault: vault, command: "group create")
        }
        do {
            if let fleet {
                try vault.createFleetGroup(group, settings: fleet, unixGroup: shared?.id)
            } else {
                try vault.createGroup(group, unixGroup: shared?.id)
            }
        } catch {
            throw GroupCommand.failure(error, command: "group create", vaultPath: vault.path)
        }
        let kind = fleet == nil ? "group" : "fleet group"
        let made = shared.map { "\(kind) \(group), \(Self.sharing($0, vault: vault, group: group))" }
        if let fleet {
            context.writeError(
                "vault: created \(made ?? "fleet group \(group)"), its items in etcd at "
                    + "\(fleet.endpoints.joined(separator: ",")); `vault group export-key \(group) FILE` gives other "
                    + "machines its key\n")
        } else {
            context.writeError("vault: created \(made ?? "group \(group), private to the vault's owner")\n")
        }
    }

    /// `--unix-group`'s value as a gid and its name, resolved before the vault is opened; a usage error
    /// when it does not resolve.
    static func resolve(_ unixGroup: String?) throws(CLIError) -> (id: UInt32, name: String?)? {
        guard let unixGroup else { return nil }
        do {
            return try UserDatabase.resolveGroup(unixGroup)
        } catch {
            throw CLIError(.usage, "--unix-group", error.message)
        }
    }

    /// The one phrase members need: a shared group is of no use until they are told how to reach it.
    static func sharing(_ shared: (id: UInt32, name: String?), vault: Vault, group: AccessGroup) -> String {
        let unix = shared.name.map { "\($0) (gid \(shared.id))" } ?? "gid \(shared.id) (a gid with no name here)"
        return "shared with Unix group \(unix): members use it with --vault \(absolute(vault.path)) --group \(group)"
    }

    /// Refuses a shared group whose Unix group the process may not give its directory to, before
    /// anything is made: otherwise the store's chown fails (EPERM) after it made the directory and
    /// opened the vault directory to others.
    static func checkMembership(_ shared: (id: UInt32, name: String?), vault: Vault, command: String) throws(CLIError) {
        let uid = ProcessIdentity.effectiveUserID
        guard uid != 0, !ProcessIdentity.groupIDs.contains(shared.id) else { return }
        let owner = UserDatabase.user(id: uid)?.name
        let unix = shared.name ?? "gid \(shared.id)"
        throw CLIError(
            .accessDenied, command,
            "the vault's owner \(owner ?? "uid \(uid)") is not a member of Unix group \(unix), and the kernel "
                + "lets only root and the group's members give a directory to it: add the owner to the group "
                + "(`usermod -aG \(shared.name ?? String(shared.id)) \(owner ?? "OWNER")`; the owner's own shells "
                + "see it after a new login) and run it again; nothing was changed")
    }

    /// `path` made absolute against the working directory: members run from elsewhere.
    static func absolute(_ path: String) -> String {
        path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }
}
