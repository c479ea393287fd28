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
            its number of item files, and the client's access: "default" (adds go there), "yes", or "no".
            A table on a terminal, else tab-separated lines (escaped as in `vault ls`); --json prints a
            JSON array. Every item file of the groups present is decrypted and verified, as `vault check`
            does (no content is shown): after the list, each file that fails (a damaged file is still
            counted) is named on standard error as `vault: PATH: why`, and the exit status is 6 (or that
            of the failure when no file failed authentication: 4 for an unsafe file, 7 for an
            input/output error). Files whose class key is locked are counted, not verified.
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
        let verified = try context.attempt(vault, "groups") { () throws(VaultError) in try vault.verifiedGroups() }
        let stored = verified.groups
        // A group whose directory cannot be listed is named on standard error, not shown as absent.
        let unlisted = Set(verified.problems.map(\.group))
        let client = vault.client
        var rows: [Row] = stored.map {
            Row(
                group: $0.group.rawValue, items: $0.itemCount, present: true,
                usable: client.accessGroups.contains($0.group), isDefault: client.defaultGroup == $0.group)
        }
        for group in client.accessGroups
        where !stored.contains(where: { $0.group == group }) && !unlisted.contains(group.rawValue) {
            rows.append(
                Row(
                    group: group.rawValue, items: 0, present: false, usable: true,
                    isDefault: client.defaultGroup == group))
        }
        rows.sort { $0.group < $1.group }
        let text: String
        if json {
            text = try Output.json(rows)
        } else {
            let cells = rows.map { [$0.group, String($0.items), $0.access] }
            let header = ["GROUP", "ITEMS", "ACCESS"]
            text = context.output.isTerminal ? Output.table(header: header, cells) : Output.tabSeparated(cells)
        }
        try context.write(text)
        let files = verified.problems.count == 1 ? "1 item file" : "\(verified.problems.count) item files"
        try context.report(
            verified.problems, command: "groups", summary: "\(files) failed verification (see `vault check`)")
    }
}
