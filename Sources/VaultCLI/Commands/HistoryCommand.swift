import Vault
import VaultSystem

/// `vault history`: the versions an item keeps, never their secrets.
package struct HistoryCommand: Sendable, Hashable {
    /// The item (a generic password).
    package var service: String
    package var account: String
    /// `--json`: one JSON array.
    package var json: Bool

    static let info = CommandInfo(
        name: "history",
        synopsis: "vault history [--json] SERVICE [ACCOUNT]",
        summary: "list the versions a secret keeps",
        details: """
            Lists the versions of the item, oldest first: its number, when it was written, the uid
            that wrote it and the program (client) that did, and whether it is the current version or
            a deletion. Never a secret: `vault get --version N` prints one. Each change (put, rm,
            restore) is a new version; the vault keeps the 10 before the current one unless `vault
            config versions` says otherwise. `vault restore --version N` makes an old version current
            again, also after `vault rm`; `vault rm --purge` removes the item with all its versions.
            A fleet group's history is kept in etcd, the same for every machine (its versions name no
            writer). With --json, prints an array of {"version", "date", "uid", "client", "current",
            "deleted"}.
            """,
        options: [.flag("json", "print the versions as a JSON array")],
        operands: ItemName.operands,
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["SERVICE", "ACCOUNT"], minimum: 1, command: "history")
            return .history(
                HistoryCommand(
                    service: operands[0], account: operands.count > 1 ? operands[1] : "", json: parsed.flag("json")))
        })

    struct JSON: Encodable {
        var version: UInt64
        var date: String
        var uid: UInt32?
        var client: String?
        var current: Bool
        var deleted: Bool
    }

    func run(in context: Context) throws(CLIError) {
        let key = try context.itemKey(service: service, account: account)
        let vault = try context.openVault()
        let versions = try context.attempt(vault, key.description) { () throws(VaultError) in
            try vault.history(of: key)
        }
        if json {
            try context.write(
                try Output.json(
                    versions.map {
                        JSON(
                            version: $0.number, date: Output.date($0.date), uid: $0.writerID, client: $0.client,
                            current: $0.isCurrent, deleted: $0.isDeletion)
                    }))
            return
        }
        let rows = versions.map { version in
            [
                String(version.number), Output.date(version.date), version.writerID.map(String.init) ?? "-",
                version.client ?? "-", version.isCurrent ? "current" : version.isDeletion ? "deleted" : "",
            ]
        }
        try context.write(Output.table(header: ["VERSION", "DATE", "UID", "CLIENT", "STATE"], rows))
    }
}
