import Vault

/// `vault groups`: the access groups present in the vault and which the client may use.
public struct GroupsCommand: Sendable, Hashable {
    /// `--json`.
    public var json: Bool

    static let info = CommandInfo(
        name: "groups",
        synopsis: "vault groups [--json]",
        summary: "list access groups and which the client may use",
        details: """
            Lists every access group that is present in the vault or that the client may use: its name,
            its number of items, and the client's access: "default" (adds go there), "yes", or "no".
            A table on a terminal, else tab-separated lines; --json prints a JSON array.
            """,
        options: [.flag("json", "print a JSON array")],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "groups")
            return .groups(GroupsCommand(json: parsed.flag("json")))
        })

    struct Row: Encodable {
        var group: String
        var items: Int
        var present: Bool
        var usable: Bool
        var isDefault: Bool

        enum CodingKeys: String, CodingKey {
            case group, items, present, usable
            case isDefault = "default"
        }

        var access: String { isDefault ? "default" : (usable ? "yes" : "no") }
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let stored = try context.attempt(vault, "groups") { () throws(VaultError) in try vault.storedGroups() }
        let client = vault.client
        var rows: [Row] = stored.map {
            Row(
                group: $0.group.rawValue, items: $0.itemCount, present: true,
                usable: client.accessGroups.contains($0.group), isDefault: client.defaultGroup == $0.group)
        }
        for group in client.accessGroups where !stored.contains(where: { $0.group == group }) {
            rows.append(
                Row(
                    group: group.rawValue, items: 0, present: false, usable: true,
                    isDefault: client.defaultGroup == group))
        }
        rows.sort { $0.group < $1.group }
        if json {
            try context.write(try Output.json(rows))
            return
        }
        let cells = rows.map { [$0.group, String($0.items), $0.access] }
        if context.output.isTerminal {
            try context.write(Output.table(header: ["GROUP", "ITEMS", "ACCESS"], cells))
        } else {
            try context.write(Output.tabSeparated(cells))
        }
    }
}
