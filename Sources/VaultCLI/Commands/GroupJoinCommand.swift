import Vault
import VaultSystem

/// `vault group join NAME --etcd URL[,URL…] --group-key FILE`: uses on this machine a fleet group that
/// another machine made.
package struct GroupJoinCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup
    /// The key file `group export-key` wrote.
    package var keyFile: String
    /// Where the cluster is.
    package var settings: FleetSettings
    /// `--unix-group`: the Unix group to share it with on this machine, as given (a name or a gid).
    package var unixGroup: String?
    /// `--backup-key-file K`: opens a key file sealed under that key file (else a passphrase is asked).
    package var backupKeyFile: String? = nil

    static let info = CommandInfo(
        name: "join",
        synopsis: "vault group join NAME --etcd URL[,URL…] --group-key FILE [--unix-group UNIXGROUP] [etcd options]",
        summary: "use a fleet group that another machine made, with its exported key",
        details: """
            Joins fleet group NAME: checks the key in FILE (written by `vault group export-key` on a
            machine that has the group) against the group etcd holds under its id, then makes the group
            here and reads its items from etcd. FILE is sealed: its passphrase is asked on the terminal
            or read from --passphrase-fd N, or it opens with --backup-key-file K when it was exported so
            (a key file that an earlier build wrote in the clear needs neither; delete it once joined).
            A FILE that others can access is refused (exit status 4). From then on `--group NAME` works
            as on any group, with
            every write going to etcd. (--group-key, not --key-file: --key-file is the vault's own
            master key file.) Run it as the vault's owner. With --unix-group the
            group is shared on this machine with the members of UNIXGROUP (a group name or a
            numeric gid), as `vault group create --unix-group` shares one.
            """,
        options: FleetOptions.specs + [
            .value("group-key", "FILE", "the key file that `vault group export-key` wrote"),
            .value("backup-key-file", "K", "open FILE with the 32-byte key file K it was sealed under"),
            .value(
                "unix-group", "UNIXGROUP",
                "share the group on this machine with the members of this Unix group (a name or a gid)"),
        ],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            let group = try GroupCommand.group(parsed, command: "group join")
            guard let settings = try FleetOptions.settings(parsed, command: "group join") else {
                throw UsageError("needs --etcd URL[,URL…]", command: "group join")
            }
            guard let keyFile = parsed.value("group-key"), !keyFile.isEmpty else {
                throw UsageError("needs --group-key FILE (from `vault group export-key`)", command: "group join")
            }
            var command = GroupJoinCommand(
                group: group, keyFile: keyFile, settings: settings, unixGroup: parsed.value("unix-group"))
            command.backupKeyFile = try BackupOptions.keyFile(parsed, command: "group join")
            return .groupJoin(command)
        })

    func run(in context: Context) throws(CLIError) {
        let shared = try GroupCreateCommand.resolve(unixGroup)
        let vault = try context.openVault()
        if let shared, !vault.isMember {
            try GroupCreateCommand.checkMembership(shared, vault: vault, command: "group join")
        }
        let key = try openingKey(in: context, vault: vault)
        do {
            try vault.joinFleetGroup(
                group, keyFileAt: keyFile, settings: settings, unixGroup: shared?.id, openingWith: key)
        } catch {
            throw GroupCommand.failure(error, command: "group join", vaultPath: vault.path)
        }
        let sharing = shared.map { ", " + GroupCreateCommand.sharing($0, vault: vault, group: group) } ?? ""
        context.writeError(
            "vault: joined fleet group \(group) (etcd at \(settings.endpoints.joined(separator: ",")))\(sharing)\n")
    }

    /// What opens the key file: nothing for one in the clear (an earlier build's, with a note to delete
    /// it), `--backup-key-file K` for one sealed under a key file, else its passphrase.
    private func openingKey(in context: Context, vault: Vault) throws(CLIError) -> BackupKey? {
        let sealing: BackupFile.Sealing?
        do {
            sealing = try Vault.sealingOfFleetGroupKeyFile(at: keyFile)
        } catch {
            throw GroupCommand.failure(error, command: "group join", vaultPath: vault.path)
        }
        switch sealing {
        case nil:
            context.writeError(
                "vault: note: \(keyFile) holds the group's keys in the clear (an earlier build's export); delete it "
                    + "once joined\n")
            return nil
        case .keyFile?:
            guard let backupKeyFile else {
                throw CLIError(.usage, keyFile, "is sealed under a backup key file: give --backup-key-file K")
            }
            return try BackupOptions.load(backupKeyFile)
        case .passphrase?:
            guard backupKeyFile == nil else {
                throw CLIError(.usage, keyFile, "is sealed under a passphrase: join without --backup-key-file")
            }
            return .passphrase(
                try context.passphrase(PassphraseRequest(.openBackup, for: "the key file \(keyFile)"), subject: keyFile)
            )
        }
    }
}
