import Vault

/// `vault group ls [--json]`: the access groups of the vault with how each one's key is kept.
public struct GroupListCommand: Sendable, Hashable {
    /// `--json`.
    public var json: Bool

    static let info = CommandInfo(
        name: "ls",
        synopsis: "vault group ls [--json]",
        summary: "list the access groups, shared or private, with their items",
        details: """
            Lists the access groups of the vault, one per line: the name; "shared" when its key is kept
            for the members of a Unix group, "private" when it is the owner's alone, "?" when this
            process cannot tell; the Unix group of a shared group (its /etc/group name, else its gid;
            "-" for none); the number of items ("-" when this process may not list the group); and
            whether this process can use it ("yes" or "no"). The vault's owner sees every group; a member
            of shared groups (no master.key) sees those its client names (--group NAME). A table on a
            terminal, else tab-separated lines (escaped as in `vault ls`); --json prints a JSON array
            with the fields name, shared, unixGroup, unixGroupID, items and usable, null where unknown.
            It counts item files without reading them: `vault groups` and `vault check` verify them.
            """,
        options: [.flag("json", "print a JSON array")],
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

        init(_ info: Vault.GroupInfo) {
            name = info.group.rawValue
            shared = info.isShared
            unixGroup = info.unixGroupName
            unixGroupID = info.unixGroupID
            items = info.itemCount
            usable = info.usable
        }

        enum CodingKeys: String, CodingKey {
            case name, shared, unixGroup, unixGroupID, items, usable
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
        }

        /// The cells of the text output.
        var cells: [String] {
            [
                name, shared.map { $0 ? "shared" : "private" } ?? "?",
                unixGroup ?? unixGroupID.map(String.init) ?? "-", items.map(String.init) ?? "-", usable ? "yes" : "no",
            ]
        }
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let infos = try context.attempt(vault, "group ls") { () throws(VaultError) in try vault.groupInfos() }
        let rows = infos.map(Row.init).sorted { $0.name < $1.name }
        let text: String
        if json {
            text = try Output.json(rows)
        } else {
            let header = ["GROUP", "SHARING", "UNIX-GROUP", "ITEMS", "USABLE"]
            let cells = rows.map(\.cells)
            text = context.output.isTerminal ? Output.table(header: header, cells) : Output.tabSeparated(cells)
        }
        try context.write(text)
    }
}
