import Vault
import VaultSystem

/// `vault upgrade`: converts a vault of the old format 1 to the current format.
package struct UpgradeCommand: Sendable, Hashable {
    static let info = CommandInfo(
        name: "upgrade",
        synopsis: "vault upgrade",
        summary: "convert a vault of the old format 1 to the current format",
        details: """
            Converts a vault made by an older vault (format 1: one key for every access group) to the
            current format, where each group has its own key and can be shared with a Unix group (`vault
            group create`). Any command that opens such a vault with its master key does this first (and
            says so once on standard error); this command does it on purpose, for example before
            services that open the vault without its key or passphrase start. Every item is written again
            into a new groups directory and one rename commits: a kill at any step leaves the vault in the
            old format or the new one, with every item (the next command finishes or undoes it). The master
            key stays where it is (master.key, or the external key file). Needs the master key (the
            passphrase of a passphrase vault). Damaged items stop it before anything changes. A vault in
            the current format already is exit status 3.
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
        let vault = try context.openVault(at: path, keySource: source, sayingUpgrade: false)
        guard vault.upgradedOnOpen else {
            throw CLIError(
                VaultError(
                    .duplicateVault, "the vault at \(path) is in the current format already; nothing was changed"),
                subject: path, vaultPath: path)
        }
        context.writeError("vault: \(path): \(Context.upgradeNotice)\n")
    }
}
