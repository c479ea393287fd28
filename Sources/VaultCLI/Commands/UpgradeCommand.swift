import Vault

/// `vault upgrade`: converts a format-1 vault to format 2.
public struct UpgradeCommand: Sendable, Hashable {
    static let info = CommandInfo(
        name: "upgrade",
        synopsis: "vault upgrade",
        summary: "convert a format-1 vault to format 2 (a key per access group)",
        details: """
            Converts the vault from format 1 (one key for every access group) to format 2, where each
            group has its own key and can be shared with a Unix group (`vault group create`). Every item
            is written again into a new groups directory and one rename commits, as `vault rekey` does: a
            kill at any step leaves the vault as format 1 or as format 2, with every item (the next
            command finishes or undoes it). The master key stays where it is (master.key, or the external
            key file). A format-1 vault is never converted otherwise. Needs the master key (the passphrase
            of a passphrase vault). Damaged items stop it before anything changes. A vault that is format 2
            already is exit status 3.
            """,
        options: [],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "upgrade")
            return .upgrade(UpgradeCommand())
        })

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        var source = context.keySource()
        // The unlock cache holds class keys, not the master key that writing every item again needs.
        source.usesUnlockCache = false
        let vault = try context.openVault(at: path, keySource: source)
        try context.attempt(vault, path) { () throws(VaultError) in try vault.upgrade(keySource: source) }
        context.writeError("vault: \(path): upgraded to format 2 (a key per access group)\n")
    }
}
