import Vault
import VaultSystem

/// `vault rm`: removes an item, or with `--all` every item of a service (or server).
package struct RemoveCommand: Sendable, Hashable {
    /// What to remove.
    package enum Target: Sendable, Hashable {
        /// One item.
        case item(ItemName)
        /// Every generic password of the service.
        case service(String)
        /// Every internet password of the server (narrowed by the options given).
        case server(InternetName)
    }

    /// What to remove.
    package var target: Target
    /// `--purge`: the item's history too (a generic password).
    package var purge = false

    static let info = CommandInfo(
        name: "rm",
        synopsis: """
            vault rm [options] SERVICE [ACCOUNT]
                   vault rm [options] --server HOST [ACCOUNT]
                   vault rm --all SERVICE | vault rm --all --server HOST
            """,
        summary: "remove a secret",
        details: """
            Removes the item (a missing ACCOUNT is the empty account); with --all, every item of the
            service, or of the server. Nothing to remove is exit status 1. A named item whose file fails
            authentication (damaged or tampered with; `vault check` lists them) is removed too, without
            being read: its file name follows from its name. It is reported on standard error; its
            secret is lost. A file whose class key is locked is never removed (exit status 5). --all
            cannot tell which damaged file held an item of the service: `vault check --remove-damaged`
            removes every damaged file.

            A removed item stays in its history: `vault restore --version N` brings it back (`vault
            history` lists the versions). With --purge, the item and every version of it are removed,
            beyond restore.
            """,
        options: [
            .flag("all", "remove every item of the service or server"),
            .flag("purge", "also remove every version of the item, beyond restore"),
        ] + InternetOptions.specs,
        operands: ItemName.operands,
        make: { parsed throws(UsageError) in
            guard parsed.flag("all") else {
                let name = try InternetOptions.itemName(parsed, command: "rm")
                if parsed.flag("purge"), case .internet = name {
                    throw UsageError(
                        "--purge removes a generic password (SERVICE [ACCOUNT]): leave out --server", command: "rm")
                }
                return .remove(RemoveCommand(target: .item(name), purge: parsed.flag("purge")))
            }
            if parsed.flag("purge") {
                throw UsageError("--purge removes one item with its versions: leave out --all", command: "rm")
            }
            if let internet = try InternetOptions.parse(parsed, command: "rm") {
                _ = try parsed.operands([], minimum: 0, command: "rm")
                return .remove(
                    RemoveCommand(
                        target: .server(
                            InternetName(
                                server: internet.server, account: "", protocolCode: internet.protocolCode,
                                port: internet.port, path: internet.path))))
            }
            let operands = try parsed.operands(["SERVICE"], minimum: 1, command: "rm")
            return .remove(RemoveCommand(target: .service(operands[0])))
        })

    func run(in context: Context) throws(CLIError) {
        let group = try context.group()
        let vault = try context.openVault()
        let query: Query
        let subject: String
        switch target {
        case .item(.generic(let service, let account)) where purge:
            let key = try context.itemKey(service: service, account: account)
            let purged = try context.attempt(vault, key.description) { () throws(VaultError) in try vault.purge(key) }
            guard purged else { throw CLIError(.notFound, key.description, "no such item, and no version of it") }
            return
        case .item(let name):
            var key = name.attributes
            key.accessGroup = group
            let removal = try context.attempt(vault, name.description) { () throws(VaultError) in
                try vault.removeItem(name.itemClass, primaryKey: key)
            }
            context.listRemoved(removal.damaged)
            return
        case .service(let service):
            query = .genericPassword(service: service, group: group, limit: .all)
            subject = "service \"\(service)\""
        case .server(let name):
            var a = ItemAttributes()
            a.server = name.server
            a.protocol = name.protocolCode
            a.port = name.port
            a.path = name.path
            a.accessGroup = group
            query = Query(itemClass: .internetPassword, attributes: a, limit: .all)
            subject = "server \"\(name.locator)\""
        }
        try context.attempt(vault, subject) { () throws(VaultError) in _ = try vault.delete(query) }
    }
}
