import Vault
import VaultSystem

/// `vault group remove-member NAME USER`: takes USER out of the Unix group that shared group NAME is
/// shared with, and cuts off for good whatever USER left behind: the Unix group gets a new gid, the
/// group's directory and files move to it, and the group's key is rotated.
package struct GroupRemoveMemberCommand: Sendable, Hashable {
    /// The shared group.
    package var group: AccessGroup
    /// The member to remove.
    package var user: String
    /// `--new-gid`: the Unix group's new gid (default: the first free one above the old).
    package var newGroupID: UInt32?
    /// `--moved-to`: the Unix group was renumbered already (in LDAP, say), to this gid.
    package var movedTo: UInt32?

    static let info = CommandInfo(
        name: "remove-member",
        synopsis: "vault group remove-member [--new-gid GID | --moved-to GID] NAME USER",
        summary: "remove a member of a shared group for good (new gid, files moved, key rotated)",
        details: """
            Removes USER from the Unix group that group NAME is shared with (gpasswd -d), gives that Unix
            group a new gid (groupmod -g: --new-gid, else the first free gid above the old), moves the
            group's directory and every file in it to the new gid (as root, also to the vault's owner),
            and rotates the group's key. A removal that only takes USER out of the Unix group leaves
            whatever USER made while a member still holding the old gid, such as a setgid copy of any
            program, which kept reading group.key; after this the old gid opens nothing of the group.
            Run it as root. Then restart the services of the remaining members (their processes carry
            the old gid until they start again), stop USER's processes (pkill -u USER), and change the
            group's secrets: USER may have copied them. Mounting the file systems members can write
            with nosuid stops setgid copies altogether.

            For a Unix group that a directory service (LDAP, SSSD) provides, gpasswd and groupmod
            cannot change it: remove USER and renumber the group there, then run this with --moved-to
            GID, which moves the vault's group to GID and rotates its key only. Running the command
            again after a failure finishes it (with --moved-to once the group was renumbered).
            """,
        options: [
            .value("new-gid", "GID", "the Unix group's new gid (default: the first free one above the old)"),
            .value("moved-to", "GID", "the Unix group was renumbered elsewhere already: move the vault's group only"),
        ],
        operands: [OperandSpec("NAME"), OperandSpec("USER")],
        make: { parsed throws(UsageError) in
            let command = "group remove-member"
            let operands = try parsed.operands(["NAME", "USER"], minimum: 2, command: command)
            let group: AccessGroup
            do throws(VaultError) { group = try AccessGroup(operands[0]) } catch {
                throw UsageError(error.message, command: command)
            }
            func gid(_ option: String) throws(UsageError) -> UInt32? {
                guard let text = parsed.value(option) else { return nil }
                guard let id = UInt32(text), id != 0, id != UInt32.max else {
                    throw UsageError("--\(option) needs a gid (a number from 1 to \(UInt32.max - 1))", command: command)
                }
                return id
            }
            let newGroupID = try gid("new-gid")
            let movedTo = try gid("moved-to")
            if newGroupID != nil, movedTo != nil {
                throw UsageError("give --new-gid or --moved-to, not both", command: command)
            }
            return .groupRemoveMember(
                GroupRemoveMemberCommand(group: group, user: operands[1], newGroupID: newGroupID, movedTo: movedTo))
        })

    func run(in context: Context) throws(CLIError) {
        let command = "group remove-member"
        let vault = try context.openVault()
        let listing = try context.attempt(vault, command) { () throws(VaultError) in try vault.listGroups() }
        guard let info = listing.groups.first(where: { $0.group == group }) else {
            throw CLIError(.notFound, command, "there is no group \(group) in the vault at \(vault.path)")
        }
        guard let oldGroupID = info.unixGroupID else {
            throw CLIError(
                .usage, command, "group \(group) is private, not shared with a Unix group: it has no members")
        }
        let newGroupID: UInt32
        if let movedTo {
            newGroupID = movedTo
        } else {
            newGroupID = try changeAccounts(oldGroupID: oldGroupID)
        }
        let moved: Int
        let resealed: Int
        do throws(VaultError) {
            moved = try vault.moveGroup(group, toUnixGroup: newGroupID)
            resealed = try vault.rotateGroup(group)
        } catch {
            throw GroupCommand.failure(error, command: command, vaultPath: vault.path)
        }
        context.writeError(
            "vault: group \(group) now belongs to gid \(newGroupID) (was \(oldGroupID)): \(Output.count(moved, "file")) "
                + "moved, its key rotated (\(Output.count(resealed, "item")) sealed again). Now restart the services "
                + "of its remaining members, stop \(user)'s processes (pkill -u \(user)), and change its secrets: "
                + "\(user) may have copied them\n")
    }

    /// Takes the user out of the Unix group and gives the group a new gid (gpasswd, groupmod); returns it.
    private func changeAccounts(oldGroupID: UInt32) throws(CLIError) -> UInt32 {
        let command = "group remove-member"
        guard ProcessIdentity.effectiveUserID == 0 else {
            throw CLIError(
                .accessDenied, command, "changing the Unix group (gpasswd, groupmod) needs root; run it as root")
        }
        guard let unixGroup = UserDatabase.group(id: oldGroupID) else {
            throw CLIError(
                .notFound, command,
                "the group's gid \(oldGroupID) has no name here; if an earlier run renumbered the Unix group, "
                    + "finish with --moved-to NEWGID")
        }
        guard let member = UserDatabase.user(named: user) else {
            throw CLIError(
                .notFound, command, "no user '\(user)' on this system (`getent passwd '\(user)'` finds none)")
        }
        if member.groupID == oldGroupID {
            throw CLIError(
                .usage, command,
                "\(unixGroup.name) is \(user)'s primary group: give \(user) another (usermod -g) first; nothing was "
                    + "changed")
        }
        if unixGroup.members.contains(user) {
            try runTool("gpasswd", ["-d", user, unixGroup.name])
        }
        var newGroupID = self.newGroupID ?? oldGroupID
        if self.newGroupID == nil {
            repeat { newGroupID += 1 } while UserDatabase.group(id: newGroupID) != nil && newGroupID < UInt32.max - 1
        } else if let taken = UserDatabase.group(id: newGroupID) {
            throw CLIError(.usage, command, "gid \(newGroupID) is group \(taken.name)'s; choose a free one")
        }
        try runTool("groupmod", ["-g", String(newGroupID), unixGroup.name])
        return newGroupID
    }

    /// Runs a shadow tool (found in the system's directories, not `$PATH`); a failure is reported with
    /// what the tool said.
    private func runTool(_ name: String, _ arguments: [String]) throws(CLIError) {
        let command = "group remove-member"
        let shown = ([name] + arguments).joined(separator: " ")
        guard let tool = ChildProcess.executablePath(for: name, searchPath: "/usr/sbin:/usr/bin:/sbin:/bin") else {
            throw CLIError(.io, command, "\(name) is not installed (apt-get install passwd)")
        }
        let result: (status: Int32, output: [UInt8])
        do {
            result = try ChildProcess.output(of: tool, arguments: arguments, mergingErrors: true)
        } catch {
            throw CLIError(.io, command, "cannot run \(shown): \(error)")
        }
        guard result.status == 0 else {
            let said = String(decoding: result.output, as: UTF8.self).split(separator: "\n").joined(separator: "; ")
            throw CLIError(
                .io, command,
                "\(shown) failed (\(said)); for a Unix group from LDAP or SSSD, remove \(user) and renumber the "
                    + "group there, then run this with --moved-to NEWGID")
        }
    }
}
