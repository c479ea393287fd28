import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

/// `vault get`: the secret's bytes to standard output, exactly as stored.
package struct GetCommand: Sendable, Hashable {
    /// The item.
    package var name: ItemName
    /// `--json`: the attributes and the secret as one JSON object.
    package var json: Bool
    /// `--fresh`: a fleet group's item only as etcd confirms it, never from the cache alone.
    package var fresh: Bool = false
    /// `--version N`: that version's secret (`vault history`), not the current one.
    package var version: UInt64? = nil
    /// `--report-stale`: exit status 10 when a fleet group's answer came from the cache.
    package var reportStale = false

    static let info = CommandInfo(
        name: "get",
        synopsis: "vault get [options] SERVICE [ACCOUNT]\n       vault get [options] --server HOST [ACCOUNT]",
        summary: "print a secret",
        details: """
            Writes the secret's bytes to standard output exactly as stored, with a newline after them
            only when standard output is a terminal. With --json, prints the item's attributes and the
            secret as one JSON object: "secret" is the text when it is UTF-8, else base64, as
            "secretEncoding" ("utf8" or "base64") says. A missing item is exit status 1, so that
            `if vault get NAME >/dev/null` reads like grep. A missing ACCOUNT is the empty account.

            In a fleet group, the item is read from etcd's copy when etcd answers. When it does not, the
            answer comes from this machine's cache and standard error says so and since when; with
            --report-stale the exit status is then 10 (the secret is printed all the same), and with
            --fresh the answer does not come at all (exit status 9).

            With --version N, prints the secret of version N of the item (`vault history` lists them);
            a version that is not kept is exit status 1.
            """,
        options: [
            .flag("json", "print the attributes and the secret as JSON"),
            .flag("fresh", "in a fleet group, fail (exit status 9) rather than answer from the cache"),
            .flag("report-stale", "in a fleet group, exit status 10 when the answer came from the cache"),
            .value("version", "N", "print version N of the secret (see `vault history`)"),
        ] + InternetOptions.specs,
        operands: ItemName.operands,
        make: { parsed throws(UsageError) in
            var command = GetCommand(
                name: try InternetOptions.itemName(parsed, command: "get"), json: parsed.flag("json"),
                fresh: parsed.flag("fresh"))
            command.reportStale = parsed.flag("report-stale")
            if let text = parsed.value("version") {
                guard case .generic = command.name, !command.json else {
                    throw UsageError(
                        "--version reads a generic password (SERVICE [ACCOUNT]): leave out --server and --json",
                        command: "get")
                }
                command.version = try RestoreCommand.versionNumber(text, command: "get", allowingZero: false)
            }
            return .get(command)
        })

    func run(in context: Context) throws(CLIError) {
        let group = try context.group()
        let vault = try context.openVault()
        if fresh { vault.requireFreshFleetReads(true) }
        do {
            try answer(vault, group: group, in: context)
        } catch {
            context.noteStaleFleetReads(vault)
            throw error
        }
        try context.finishFleetReads(vault, report: reportStale)
    }

    /// Writes the secret (or the JSON) of the item.
    private func answer(_ vault: Vault, group: AccessGroup?, in context: Context) throws(CLIError) {
        if let version, case .generic(let service, let account) = name {
            let key = try context.itemKey(service: service, account: account)
            let data = try context.attempt(vault, name.description) { () throws(VaultError) in
                try vault.data(for: key, version: version)
            }
            guard var secret = data else {
                throw CLIError(.notFound, name.description, "has no version \(version); `vault history` lists them")
            }
            var bytes = [UInt8](secret)
            defer {
                secret.wipe()
                bytes.wipe()
            }
            try context.write(bytes: bytes)
            if context.output.isTerminal { try context.write("\n") }
            return
        }
        // The secret alone goes from the file into secure memory and from there to standard output; the
        // JSON's text is built from a copy (docs/OPERATIONS.md, "Where a secret is in memory").
        var secure: SecureBytes?
        let item: MatchedItem
        do {
            item = try context.attempt(vault, name.description) { () throws(VaultError) in
                if json { return try vault.copyMatching(name.query(group: group), returning: [.data, .attributes])[0] }
                let found = try vault.secureSecret(for: name.query(group: group))
                secure = found.secret
                return found.item
            }
        } catch  where error.code == .notFound {
            context.writeError(error)
            let near = NotFoundHints.nearMatches(vault, to: name, group: group)
            if !near.isEmpty {
                context.writeError(
                    "vault: note: near matches: " + near.map { "vault get \($0)" }.joined(separator: "; ") + "\n")
            }
            if let note = NotFoundHints.otherGroups(vault, searched: context.searchedGroups(vault)) {
                context.writeError("vault: \(note)\n")
            }
            throw CLIError(.notFound, nil, "", reported: true)
        }
        if let secure {
            try context.write(secret: secure)
            if context.output.isTerminal { try context.write("\n") }
            return
        }
        var secret = item.data ?? Data()
        defer { secret.wipe() }
        try context.write(try Output.json(ItemJSON(item, secret: secret)))
    }
}
