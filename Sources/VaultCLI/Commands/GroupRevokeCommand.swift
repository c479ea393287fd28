import Vault
import VaultSystem

/// `vault group revoke NAME MACHINE...`: machines removed from a fleet group for good, by a rotation of
/// its key that leaves them out.
package struct GroupRevokeCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup
    /// The machines: ids (or unique prefixes of at least 4 digits) or host names.
    package var machines: [String]

    static let info = CommandInfo(
        name: "revoke",
        synopsis: "vault group revoke NAME MACHINE...",
        summary: "remove machines from a fleet group for good: its key rotated without them",
        details: """
            Rotates the key of fleet group NAME (as `vault group rotate NAME`) and seals the new key to
            every registered machine but MACHINE (an id from `vault group machines NAME`, a unique prefix
            of one of at least 4 digits, or a unique host name). A revoked machine keeps the key it had,
            which opens nothing written from now on, and its reads of the group are refused (exit status
            4); a key file exported before joins nothing. What it read before, it may have kept: change
            those secrets. Remove its etcd credentials too (its etcd user, or its client certificate):
            with them it can still delete or replace what etcd holds. Run it as the vault's owner on
            another machine of the group.
            """,
        options: [],
        operands: [OperandSpec("NAME"), OperandSpec("MACHINE")],
        make: { parsed throws(UsageError) in
            // NAME, then one MACHINE or more.
            let operands = parsed.operands
            guard operands.count >= 2 else {
                throw UsageError("missing operand \(operands.isEmpty ? "NAME" : "MACHINE")", command: "group revoke")
            }
            let group: AccessGroup
            do throws(VaultError) {
                group = try AccessGroup(operands[0])
            } catch {
                throw UsageError(error.message, command: "group revoke")
            }
            let machines = Array(operands.dropFirst())
            if machines.contains(where: \.isEmpty) { throw UsageError("MACHINE is empty", command: "group revoke") }
            return .groupRevoke(GroupRevokeCommand(group: group, machines: machines))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let rotation: FleetRotation
        do {
            rotation = try vault.rotateFleetGroup(group, revoking: machines)
        } catch {
            throw GroupCommand.failure(error, command: "group revoke", vaultPath: vault.path)
        }
        let revoked = rotation.revoked.map { "\($0.id) (\(Output.escape($0.hostName)))" }.joined(separator: ", ")
        context.writeError(
            "vault: revoked \(revoked) from fleet group \(group): " + GroupRotateCommand.summary(rotation)
                + "; remove its etcd credentials too, and change the secrets it could read\n")
    }
}
