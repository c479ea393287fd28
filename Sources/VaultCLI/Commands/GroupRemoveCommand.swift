import Vault
import VaultSystem

/// `vault group rm NAME [--force]`: removes an access group of the vault, with its key.
package struct GroupRemoveCommand: Sendable, Hashable {
    /// The group to remove.
    package var group: AccessGroup
    /// `--force`: remove it with the items it still holds.
    package var force: Bool
    /// `--everywhere` (a fleet group, with `--force`): remove it from etcd and so from every machine.
    package var everywhere = false

    static let info = CommandInfo(
        name: "rm",
        synopsis: "vault group rm NAME [--force [--everywhere]]",
        summary: "remove an access group",
        details: """
            Removes access group NAME from the vault, with its key and its lock. A group that still
            holds items is refused (nothing is changed) unless --force, which removes the items with it:
            their secrets are lost. Says on standard error how many items went with it. Run it as the
            vault's owner. A group that does not exist is exit status 1. For a fleet group it removes this
            machine's copy (its key and cache): etcd and the other machines keep the group, and the
            message says so. With --force --everywhere it removes the fleet group from etcd first (its
            items, their history and its registration), then this machine's copy: the other machines
            then refuse it, naming who removed it and when (exit status 1), until `vault group rm NAME
            --force` removes their copies, and a kept key file joins nothing.
            """,
        options: [
            .flag("force", "remove the group with the items it still holds (their secrets are lost)"),
            .flag("everywhere", "with --force, remove a fleet group from etcd and so from every machine"),
        ],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            var command = GroupRemoveCommand(
                group: try GroupCommand.group(parsed, command: "group rm"), force: parsed.flag("force"))
            command.everywhere = parsed.flag("everywhere")
            if command.everywhere, !command.force {
                throw UsageError(
                    "--everywhere removes every item of the fleet group on every machine: give --force with it",
                    command: "group rm")
            }
            return .groupRemove(command)
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let isFleet = Vault.isFleetGroup(vaultPath: vault.path, group: group)
        if everywhere {
            guard isFleet else {
                throw CLIError(.usage, "group rm", "--everywhere removes a fleet group; \(group) is not one")
            }
            let removed: Int
            do {
                removed = try vault.removeFleetGroupEverywhere(group)
            } catch {
                throw GroupCommand.failure(error, command: "group rm", vaultPath: vault.path)
            }
            context.writeError(
                "vault: removed fleet group \(group) from the fleet: from etcd (\(Output.count(removed, "item")), their "
                    + "history and its registration) and this machine's copy; the other machines refuse it from now "
                    + "on, and `vault group rm \(group) --force` there removes their copies\n")
            return
        }
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
