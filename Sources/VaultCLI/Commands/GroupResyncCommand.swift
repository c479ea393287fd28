import Vault
import VaultSystem

/// `vault group resync NAME [--accept-rollback]`: a fleet group read from etcd anew, and the operator's
/// way out when etcd was restored to an older state than this machine has seen.
package struct GroupResyncCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup
    /// `--accept-rollback`: what etcd holds now becomes the group's state.
    package var acceptRollback: Bool

    static let info = CommandInfo(
        name: "resync",
        synopsis: "vault group resync NAME [--accept-rollback]",
        summary: "read a fleet group from etcd anew; accept a rollback of etcd on purpose",
        details: """
            Reads fleet group NAME from etcd anew, checking its manifest as every read does. A group whose
            etcd copy is older than this machine has seen (etcd restored from a snapshot, a member gone
            back), or whose items there were deleted, replayed or replaced, is refused with exit status 6
            and nothing is taken from it. If that state is what you want (you restored etcd yourself),
            --accept-rollback makes it the group's on every machine: a new manifest numbered above
            everything this machine saw, listing etcd's items that open under the group's key (others
            are removed from etcd). Other machines that saw newer states run it too. The outcome goes to
            standard error and to the system log. Run it as the vault's owner, or as a member of a
            fleet group shared with a Unix group: a member holds the group's key, and its accepted
            rollback is every machine's too.
            """,
        options: [.flag("accept-rollback", "make what etcd holds now the group's state, even if older")],
        operands: [OperandSpec("NAME")],
        make: { parsed throws(UsageError) in
            .groupResync(
                GroupResyncCommand(
                    group: try GroupCommand.group(parsed, command: "group resync"),
                    acceptRollback: parsed.flag("accept-rollback")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let report: FleetResync
        do {
            report = try vault.resyncFleetGroup(group, acceptingRollback: acceptRollback)
        } catch {
            throw GroupCommand.failure(error, command: "group resync", vaultPath: vault.path)
        }
        let previous = report.previousCounter.map { "manifest \($0)" } ?? "no manifest"
        let found = report.replicaCounter.map { "manifest \($0)" } ?? "no manifest that opened"
        context.writeError(
            "vault: resynchronised fleet group \(group)" + (acceptRollback ? ", rollback accepted" : "")
                + ": this machine had seen \(previous), etcd had \(found); now manifest \(report.counter), "
                + Output.count(report.itemCount, "item")
                + (report.removedCount > 0 ? ", \(Output.count(report.removedCount, "item")) removed from etcd" : "")
                + " (logged)\n")
    }
}
