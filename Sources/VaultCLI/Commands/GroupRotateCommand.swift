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
            """,
        options: [],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            .groupRotate(GroupRotateCommand(group: try GroupCommand.group(parsed, command: "group rotate")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let resealed: Int
        do {
            resealed = try vault.rotateGroup(group)
        } catch {
            throw GroupCommand.failure(error, command: "group rotate", vaultPath: vault.path)
        }
        context.writeError(
            "vault: rotated the key of group \(group) (\(Output.count(resealed, "item")) sealed again)\n")
    }
}
