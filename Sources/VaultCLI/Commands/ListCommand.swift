import Vault

/// `vault ls`: the items the client can see, never their secrets.
public struct ListCommand: Sendable, Hashable {
    /// `--service`: only generic passwords of this service.
    public var service: String?
    /// `--server` and the other internet options: only these internet passwords.
    public var server: InternetName?
    /// `--json`.
    public var json: Bool

    static let info = CommandInfo(
        name: "ls",
        synopsis: "vault ls [--service S | --server HOST] [--group G] [--json]",
        summary: "list items (never secrets)",
        details: """
            Lists the items in the client's groups (or in --group G): kind (generic or internet),
            service (for an internet password its server as PROTOCOL://HOST:PORT/PATH), account, group,
            label, creation and modification dates (ISO 8601, UTC). A table on a terminal, else one
            tab-separated line per item with tabs, newlines and backslashes escaped as \\t, \\n, \\\\.
            With --json, a JSON array of objects. No items is an empty list and exit status 0.
            """,
        options: [
            .value("service", "S", "only generic passwords of service S"),
            .flag("json", "print a JSON array"),
        ] + InternetOptions.specs,
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "ls")
            var command = ListCommand(service: parsed.value("service"), server: nil, json: parsed.flag("json"))
            if let internet = try InternetOptions.parse(parsed, command: "ls") {
                guard command.service == nil else {
                    throw UsageError(
                        "--service and --server select different kinds of items; give one", command: "ls")
                }
                command.server = InternetName(
                    server: internet.server, account: "", protocolCode: internet.protocolCode, port: internet.port,
                    path: internet.path)
            }
            return .list(command)
        })

    func run(in context: Context) throws(CLIError) {
        let group = try context.group()
        let vault = try context.openVault()
        var query = Query(itemClass: nil, limit: .all)
        if let service {
            query.itemClass = .genericPassword
            query.attributes.service = service
        }
        if let server {
            query.itemClass = .internetPassword
            query.attributes.server = server.server
            query.attributes.protocol = server.protocolCode
            query.attributes.port = server.port
            query.attributes.path = server.path
        }
        query.attributes.accessGroup = group
        let items: [MatchedItem]
        do {
            items = try vault.copyMatching(query, returning: [.attributes])
        } catch  where error.status == .itemNotFound {
            items = []
        } catch {
            throw CLIError(error, subject: "ls", vaultPath: vault.path)
        }
        let rows = items.map { ItemJSON($0) }.sorted {
            ($0.group, $0.kind, $0.serviceColumn, $0.account) < ($1.group, $1.kind, $1.serviceColumn, $1.account)
        }
        if json {
            try context.write(try Output.json(rows))
            return
        }
        let cells = rows.map {
            [$0.kind, $0.serviceColumn, $0.account, $0.group, $0.label ?? "", $0.created, $0.modified]
        }
        if context.output.isTerminal {
            try context.write(
                Output.table(header: ["KIND", "SERVICE", "ACCOUNT", "GROUP", "LABEL", "CREATED", "MODIFIED"], cells))
        } else {
            try context.write(Output.tabSeparated(cells))
        }
    }
}
