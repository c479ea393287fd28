import Vault
import VaultSystem

/// `vault group create|ls|rm|rotate|export-key|join|resync|machines|revoke`: the access groups of the vault, each with
/// its own key, private to the vault's owner or shared with a Unix group. The subcommands have a file
/// each.
enum GroupCommand {
    static let info = CommandInfo(
        name: "group",
        summary: "create, list, remove and rotate access groups, private or shared with a Unix group",
        details: """
            Manages the access groups of the vault, where each group has its own key. A private group is the
            vault's owner's alone. A shared group's key can be read by the members of one Unix group, who
            then use that group, and no other, without master.key: `vault --vault DIR --group NAME get …`.
            The kernel enforces it through file modes (the group's directory is OWNER:UNIXGROUP 2770, its
            group.key 0640). Create and remove groups as the vault's owner (root acts as the owner, as for
            every command). `vault group ls` works on any vault, and for a member too; `vault groups` is
            another name for it.
            """,
        subcommands: [
            GroupCreateCommand.info, GroupListCommand.info, GroupRemoveCommand.info, GroupRotateCommand.info,
            GroupRemoveMemberCommand.info,
            GroupExportKeyCommand.info, GroupJoinCommand.info, GroupResyncCommand.info, GroupMachinesCommand.info,
            GroupRevokeCommand.info,
        ])

    /// A failed group operation of `command` ("group create"). The store's message names the group,
    /// the vault and the way out, so it is kept: `CLIError`'s wording for the same statuses is about
    /// items ("vault put replaces an item", the groups searched). Vault-wide failures name the vault.
    static func failure(_ error: VaultError, command: String, vaultPath: String) -> CLIError {
        switch error.status {
        case .duplicateItem, .itemNotFound: return CLIError(ExitCode(error.status), command, error.message)
        default: return CLIError(error, subject: command, vaultPath: vaultPath)
        }
    }

    /// The group that operand NAME of `command` names, validated.
    static func group(_ parsed: ParsedArguments, command: String) throws(UsageError) -> AccessGroup {
        let name = try parsed.operands(["NAME"], minimum: 1, command: command)[0]
        do {
            return try AccessGroup(name)
        } catch {
            throw UsageError(error.message, command: command)
        }
    }
}
