import Vault
import VaultSystem

/// `vault group rm NAME [--force]`: removes an access group of the vault, with its key.
package struct GroupRemoveCommand: Sendable, Hashable {
    /// The group to remove.
    package var group: AccessGroup
    /// `--force`: remove it with the items it still holds.
    package var force: Bool

    static let info = CommandInfo(
        name: "rm",
        synopsis: "vault group rm NAME [--force]",
        summary: "remove an access group",
        details: """
            Removes access group NAME from the vault, with its key and its lock. A group that still
            holds items is refused (nothing is changed) unless --force, which removes the items with it:
            their secrets are lost. Says on standard error how many items went with it. Run it as the
            vault's owner. A group that does not exist is exit status 1. For a fleet group it removes this
            machine's copy (its key and cache): etcd and the other machines keep the group, and the
            message says so.
            """,
        options: [.flag("force", "remove the group with the items it still holds (their secrets are lost)")],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            .groupRemove(
                GroupRemoveCommand(
                    group: try GroupCommand.group(parsed, command: "group rm"), force: parsed.flag("force")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let isFleet = Vault.isFleetGroup(vaultPath: vault.path, group: group)
        let removed: Int
        do {
            removed = try vault.removeGroup(group, force: force)
        } catch {
            throw GroupCommand.failure(error, command: "group rm", vaultPath: vault.path)
        }
        // Said even for none: a removal that took secrets with it must not pass unnoticed.
        let items = removed == 0 ? "it held no items" : "with the \(Output.count(removed, "item")) it held"
        guard isFleet else {
            context.writeError("vault: removed group \(group) (\(items))\n")
            return
        }
        context.writeError(
            "vault: removed this machine's copy of fleet group \(group) (its key, and the cache \(items)); etcd and "
                + "the other machines keep the group and its items\n")
    }
}
