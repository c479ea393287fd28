import Vault
import VaultSystem

/// `vault ls`: the items the client can see, never their secrets.
package struct ListCommand: Sendable, Hashable {
    /// `--service`: only generic passwords of this service.
    package var service: String?
    /// `--server` and the other internet options: only these internet passwords.
    package var server: InternetName?
    /// `--json`.
    package var json: Bool
    /// `--all`: the device identifiers of `vault uuid` too.
    package var all = false
    /// `--report-stale`: exit status 10 when a fleet group's answer came from the cache.
    package var reportStale = false

    static let info = CommandInfo(
        name: "ls",
        synopsis: "vault ls [--service S | --server HOST] [--group G] [--all] [--json]",
        summary: "list items (never secrets)",
        details: """
            Lists the items in the client's groups (or in --group G): kind (generic or internet),
            service (for an internet password its server as PROTOCOL://HOST:PORT/PATH), account, group,
            label, creation and modification dates (ISO 8601, UTC). The device identifiers that `vault
            uuid` keeps are not the user's items and are listed only with --all (or --service
            vault.device-identifier). A table under a header on a terminal, else one
            tab-separated line per item. In both, backslashes, tabs, newlines and carriage returns are
            escaped as \\\\, \\t, \\n, \\r, other control characters as \\xHH (C0, DEL) or \\u{H...}
            (C1, bidirectional controls). With --json, a JSON array of objects, exact. No items is an
            empty list and exit status 0. An item file of the groups searched that fails authentication
            or cannot be read (it may hold a matching item) is named on standard error as
            `vault: PATH: why`, after the list of the readable items; the exit status is then 6 (or
            that of the failure when no file failed authentication: 4 for an unsafe file, 7 for an
            input/output error).
            """,
        options: [
            .value("service", "S", "only generic passwords of service S", kind: .service),
            .flag("json", "print a JSON array"),
            .flag("all", "also list the device identifiers of `vault uuid`"),
            .flag("report-stale", "exit status 10 when a fleet group was listed from this machine's cache"),
        ] + InternetOptions.specs,
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "ls")
            var command = ListCommand(service: parsed.value("service"), server: nil, json: parsed.flag("json"))
            command.all = parsed.flag("all")
            command.reportStale = parsed.flag("report-stale")
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
        do {
            try list(vault, query, in: context)
        } catch {
            context.noteStaleFleetReads(vault)
            throw error
        }
        try context.finishFleetReads(vault, report: reportStale)
    }

    /// Writes the items `query` finds, then names the files that could not be read.
    private func list(_ vault: Vault, _ query: Query, in context: Context) throws(CLIError) {
        let found: SearchResult
        do {
            found = try vault.search(query, returning: [.attributes])
        } catch {
            throw CLIError(error, subject: "ls", vaultPath: vault.path)
        }
        // The device identifiers of `vault uuid` are the vault's, not the user's items: shown when asked for.
        let listed =
            all || service != nil
            ? found.items
            : found.items.filter {
                !($0.itemClass == .genericPassword && $0.attributes.service == Vault.deviceIdentifierService)
            }
        let rows = listed.map { ItemJSON($0) }.sorted {
            ($0.group, $0.kind, $0.serviceColumn, $0.account) < ($1.group, $1.kind, $1.serviceColumn, $1.account)
        }
        let text: String
        if json {
            text = try Output.json(rows)
        } else {
            let cells = rows.map {
                [$0.kind, $0.serviceColumn, $0.account, $0.group, $0.label ?? "", $0.created, $0.modified]
            }
            let header = ["KIND", "SERVICE", "ACCOUNT", "GROUP", "LABEL", "CREATED", "MODIFIED"]
            text = context.output.isTerminal ? Output.table(header: header, cells) : Output.tabSeparated(cells)
        }
        try context.write(text)
        if listed.isEmpty, found.problems.isEmpty,
            let note = NotFoundHints.otherGroups(vault, searched: context.searchedGroups(vault))
        {
            context.writeError("vault: \(note)\n")
        }
        // After the list, so that what could be read is never held back by what could not.
        let count = found.problems.count
        let (files, are) = count == 1 ? ("1 item file", "is") : ("\(count) item files", "are")
        try context.report(
            found.problems, command: "ls",
            summary: "\(files) could not be read and \(are) missing from the list (see `vault check`)")
    }
}
