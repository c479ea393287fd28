import Vault

/// `vault group join NAME --etcd URL[,URL…] --group-key FILE`: uses on this machine a fleet group that
/// another machine made.
public struct GroupJoinCommand: Sendable, Hashable {
    /// The fleet group.
    public var group: AccessGroup
    /// The key file `group export-key` wrote.
    public var keyFile: String
    /// Where the cluster is.
    public var settings: FleetSettings

    static let info = CommandInfo(
        name: "join",
        synopsis: "vault group join NAME --etcd URL[,URL…] --group-key FILE [etcd options]",
        summary: "use a fleet group that another machine made, with its exported key",
        details: """
            Joins fleet group NAME: checks the key in FILE (written by `vault group export-key` on a
            machine that has the group) against the group etcd holds under its id, then makes the group
            here and reads its items from etcd. From then on `--group NAME` works as on any group, with
            every write going to etcd. (--group-key, not --key-file: --key-file is the vault's own
            master key file.) Run it as the vault's owner, in a format-2 vault.
            """,
        options: FleetOptions.specs + [.value("group-key", "FILE", "the key file that `vault group export-key` wrote")],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            let group = try GroupCommand.group(parsed, command: "group join")
            guard let settings = try FleetOptions.settings(parsed, command: "group join") else {
                throw UsageError("needs --etcd URL[,URL…]", command: "group join")
            }
            guard let keyFile = parsed.value("group-key"), !keyFile.isEmpty else {
                throw UsageError("needs --group-key FILE (from `vault group export-key`)", command: "group join")
            }
            return .groupJoin(GroupJoinCommand(group: group, keyFile: keyFile, settings: settings))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        do {
            try vault.joinFleetGroup(group, keyFileAt: keyFile, settings: settings)
        } catch {
            throw GroupCommand.failure(error, command: "group join", vaultPath: vault.path)
        }
        context.writeError(
            "vault: joined fleet group \(group) (etcd at \(settings.endpoints.joined(separator: ",")))\n")
    }
}
