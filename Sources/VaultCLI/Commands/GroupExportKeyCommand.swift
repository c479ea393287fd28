import Vault
import VaultSystem

/// `vault group export-key NAME FILE`: a fleet group's key as a file, to join the group on another
/// machine with.
package struct GroupExportKeyCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup
    /// The new key file.
    package var path: String

    static let info = CommandInfo(
        name: "export-key",
        synopsis: "vault group export-key NAME FILE",
        summary: "write the key of a fleet group to a new file, for other machines to join with",
        details: """
            Writes the key of fleet group NAME (made with `vault group create NAME --etcd …`) to FILE, a
            new file (0600; an existing file is never written over, exit status 3). Whoever holds FILE
            reads every item of the group: provision it to the other machines by scp, configuration
            management or a systemd credential, and delete the copies once they joined
            (`vault group join NAME --etcd … --group-key FILE`). Run it as the vault's owner. A group
            that does not exist is exit status 1; one that is not a fleet group, 2.
            """,
        options: [],
        operands: [OperandSpec("NAME"), OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["NAME", "FILE"], minimum: 2, command: "group export-key")
            let group: AccessGroup
            do throws(VaultError) {
                group = try AccessGroup(operands[0])
            } catch {
                throw UsageError(error.message, command: "group export-key")
            }
            guard !operands[1].isEmpty else { throw UsageError("FILE is empty", command: "group export-key") }
            return .groupExportKey(GroupExportKeyCommand(group: group, path: operands[1]))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        do {
            try vault.exportFleetGroupKey(group, to: path)
        } catch {
            throw GroupCommand.failure(error, command: "group export-key", vaultPath: vault.path)
        }
        context.writeError(
            "vault: wrote the key of fleet group \(group) to \(path) (0600; it opens every item of it)\n")
    }
}
