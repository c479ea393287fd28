import Vault
import VaultSystem

/// `vault group ls [--json]`, and `vault groups`, its alias: the access groups of the vault with how
/// each one's key is kept, what the client may do with it, and every item file of it verified.
package struct GroupListCommand: Sendable, Hashable {
    /// `--json`.
    package var json: Bool

    static let details = """
        Lists the access groups of the vault, one per line: the name; "shared" when its key is kept for
        the members of a Unix group, "private" when it is the owner's alone, "?" when this process
        cannot tell, "-" for a group the client names that has no directory yet; the Unix group of a
        shared group (its name, else its gid; "-" for none); the number of item files ("-"
        when this process may not list the group); whether this process can use it ("yes" or "no": it
        holds the group's key); and the client's access ("default": adds go there, "yes": the client's
        groups name it, "no"). The vault's owner sees every group and the client's; a member of shared
        groups (no master.key) sees those its client names (--group NAME), and of a group it is not a
        member of learns no item names and no count. A table on a terminal, else tab-separated lines
        (escaped as in `vault ls`); --json prints a JSON array with the fields name, shared, unixGroup,
        unixGroupID, items, usable, present, entitled and default, null where unknown. Every item file
        of the groups this process can use is decrypted and verified, as `vault check` does (no content
        is shown): after the list, each file that fails (a damaged file is still counted) is named on
        standard error as `vault: PATH: why`, and the exit status is 6 (or that of the failure when no
        file failed authentication: 4 for an unsafe file, 7 for an input/output error). Files whose
        class key is locked are counted, not verified. `vault groups` is the same command.
        """

    static let info = CommandInfo(
        name: "ls",
        synopsis: "vault group ls [--json]",
        summary: "list the access groups, shared or private, with their items",
        details: details,
        options: [.flag("json", "print a JSON array")],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "group ls")
            return .groupList(GroupListCommand(json: parsed.flag("json")))
        })

    /// `vault groups`: `vault group ls` under its older name, with the same options, help and run.
    static let aliasInfo = CommandInfo(
        name: "groups",
        synopsis: "vault groups [--json]",
        summary: "list the access groups (an alias of `vault group ls`)",
        details: "The same command as `vault group ls`. " + details,
        options: info.options,
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "group ls")
            return .groupList(GroupListCommand(json: parsed.flag("json")))
        })

    /// One group as `--json` prints it: every key always there, `null` where this process cannot know,
    /// so that "unknown" is never mistaken for "absent".
    struct Row: Encodable {
        var name: String
        var shared: Bool?
        var unixGroup: String?
        var unixGroupID: UInt32?
        var items: Int?
        var usable: Bool
        var present: Bool
        var entitled: Bool
        var isDefault: Bool

        init(_ info: Vault.GroupInfo, client: Client) {
            name = info.group.rawValue
            shared = info.isShared
            unixGroup = info.unixGroupName
            unixGroupID = info.unixGroupID
            items = info.itemCount
            usable = info.usable
            present = info.isPresent
            entitled = client.accessGroups.contains(info.group)
            isDefault = client.defaultGroup == info.group
        }

        enum CodingKeys: String, CodingKey {
            case name, shared, unixGroup, unixGroupID, items, usable, present, entitled
            case isDefault = "default"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            // `encode` of an Optional writes null for nil (the synthesized code would leave the key out).
            try container.encode(name, forKey: .name)
            try container.encode(shared, forKey: .shared)
            try container.encode(unixGroup, forKey: .unixGroup)
            try container.encode(unixGroupID, forKey: .unixGroupID)
            try container.encode(items, forKey: .items)
            try container.encode(usable, forKey: .usable)
            try container.encode(present, forKey: .present)
            try container.encode(entitled, forKey: .entitled)
            try container.encode(isDefault, forKey: .isDefault)
        }

        /// The cells of the text output.
        var cells: [String] {
            let sharing = present ? shared.map { $0 ? "shared" : "private" } ?? "?" : "-"
            return [
                name, sharing, unixGroup ?? unixGroupID.map(String.init) ?? "-", items.map(String.init) ?? "-",
                usable ? "yes" : "no", isDefault ? "default" : (entitled ? "yes" : "no"),
            ]
        }
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let listing = try context.attempt(vault, "group ls") { () throws(VaultError) in try vault.listGroups() }
        let rows = listing.groups.map { Row($0, client: vault.client) }.sorted { $0.name < $1.name }
        let text: String
        if json {
            text = try Output.json(rows)
        } else {
            let header = ["GROUP", "SHARING", "UNIX-GROUP", "ITEMS", "USABLE", "CLIENT"]
            let cells = rows.map(\.cells)
            text = context.output.isTerminal ? Output.table(header: header, cells) : Output.tabSeparated(cells)
        }
        try context.write(text)
        let problems = listing.problems
        let groups = problems.filter(\.concernsGroup).count
        let files = problems.count - groups
        var parts: [String] = []
        if files > 0 { parts.append(files == 1 ? "1 item file" : "\(files) item files") }
        if groups > 0 { parts.append(groups == 1 ? "1 group" : "\(groups) groups") }
        try context.report(
            problems, command: "group ls",
            summary: parts.joined(separator: " and ") + " failed verification (see `vault check`)")
    }
}
