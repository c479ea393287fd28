import Vault
import VaultSystem

/// `vault group machines NAME`: the machines registered for a fleet group.
package struct GroupMachinesCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup

    static let info = CommandInfo(
        name: "machines",
        synopsis: "vault group machines NAME",
        summary: "list the machines of a fleet group, which its key rotations seal the key to",
        details: """
            Lists the machines registered for fleet group NAME in etcd, one a tab-separated line: its id,
            the host's name, the uid that registered it, when (UTC), and "this machine" or nothing. A machine registers
            itself when it first reads the group; `vault group rotate` seals the group's next key to
            each, and `vault group revoke NAME MACHINE` to each but MACHINE. A machine you do not know
            is worth revoking.
            """,
        options: [],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            .groupMachines(GroupMachinesCommand(group: try GroupCommand.group(parsed, command: "group machines")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let machines: [FleetMachine]
        do {
            machines = try vault.fleetGroupMachines(group)
        } catch {
            throw GroupCommand.failure(error, command: "group machines", vaultPath: vault.path)
        }
        let rows = machines.map { machine in
            [
                machine.id, machine.hostName, String(machine.userID),
                UTCTimestamp.iso8601(nanosecondsSince1970: machine.registeredAt),
                machine.isThisMachine ? "this machine" : "",
            ]
        }
        let text = Output.tabSeparated(rows)
        try context.write(text)
    }
}
