import Vault
import VaultSystem

/// `vault group rotate NAME`: a new key for one access group of the vault, every item sealed
/// again under it, in place.
package struct GroupRotateCommand: Sendable, Hashable {
    /// The group whose key changes.
    package var group: AccessGroup

    static let info = CommandInfo(
        name: "rotate",
        synopsis: "vault group rotate NAME",
        summary: "give an access group a new key and seal its items again",
        details: """
            Gives access group NAME of the vault a new key and seals every item of it again under
            that key, in place: no directory is replaced and no item changes its name, so services that
            bind-mount or hold the group's directory keep working, and readers get the old or the new
            value throughout. A kill at any step leaves every item readable (group.key holds both keys
            until the last item is sealed again); running it again finishes. Run it as the vault's owner
            after removing a member from the group's Unix group: a copy of the old group.key then opens
            nothing written since. Change the secrets themselves too: the member may have copied them.
            Says on standard error how many items were sealed again.

            A fleet group's key is rotated on every machine of the group, online: the new key is sealed
            to each machine registered in etcd (`vault group machines NAME`), each takes it at its next
            read, and every item and kept version in etcd is sealed again under it. A key file exported
            before joins nothing afterwards. `vault group revoke NAME MACHINE` rotates without MACHINE.
            """,
        options: [],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            .groupRotate(GroupRotateCommand(group: try GroupCommand.group(parsed, command: "group rotate")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        do {
            if vault.hasFleetSupport, Vault.isFleetGroup(vaultPath: vault.path, group: group) {
                let rotation = try vault.rotateFleetGroup(group)
                context.writeError("vault: rotated the key of fleet group \(group): \(Self.summary(rotation))\n")
                return
            }
            let resealed = try vault.rotateGroup(group)
            context.writeError(
                "vault: rotated the key of group \(group) (\(Output.count(resealed, "item")) sealed again)\n")
        } catch {
            throw GroupCommand.failure(error, command: "group rotate", vaultPath: vault.path)
        }
    }

    /// What a fleet group's rotation did, in words.
    static func summary(_ rotation: FleetRotation) -> String {
        "generation \(rotation.generation), sealed to \(Output.count(rotation.kept.count, "machine")) ("
            + rotation.kept.map { "\($0.id) \(Output.escape($0.hostName))" }.joined(separator: ", ") + "); "
            + "\(Output.count(rotation.itemsResealed, "item")) and "
            + "\(Output.count(rotation.versionsResealed, "kept version")) sealed again"
            + (rotation.itemsLeft == 0
                ? ""
                : "; \(Output.count(rotation.itemsLeft, "item")) left under the key before (other machines kept "
                    + "writing): every machine kept reads them, and the next rotation seals them first")
    }
}
