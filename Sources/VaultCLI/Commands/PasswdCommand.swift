import Vault
import VaultSystem

/// `vault passwd`: protects `master.key` with a new passphrase (or, with `--remove`, stores it plainly
/// again). Only the key file changes: the key and every item stay as they are. Atomic: a crash leaves
/// the old passphrase or the new one working.
package struct PasswdCommand: Sendable, Hashable {
    /// `--remove`: store the key without a passphrase.
    package var remove: Bool
    /// `--kdf-cost`: the Argon2id cost of the new wrapping.
    package var cost = KeyDerivationCost.moderate

    static let info = CommandInfo(
        name: "passwd",
        synopsis: "vault passwd [--remove]",
        summary: "set or change the passphrase of master.key",
        details: """
            Asks for the current passphrase (when there is one), then for the new one, twice, on the
            terminal; or reads them, one per line, from --passphrase-fd N. Only master.key is rewritten,
            atomically: the items are not touched, and a crash leaves the old or the new passphrase working.
            --remove stores the key without a passphrase (mode 0600 still protects it).
            """,
        options: [.flag("remove", "store the master key without a passphrase"), KeyDerivationCost.spec],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "passwd")
            return .passwd(
                PasswdCommand(
                    remove: parsed.flag("remove"), cost: try KeyDerivationCost.parse(parsed, command: "passwd")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let source = context.keySource(limits: cost.limits)
        var newPassphrase: SecureBytes?
        if !remove {
            do {
                newPassphrase = try source.askPassphrase(PassphraseRequest(.newPassphrase, for: vault.masterKeyPath))
            } catch {
                throw CLIError(VaultError(error), subject: vault.path, vaultPath: vault.path)
            }
        }
        try context.attempt(vault, vault.path) { () throws(VaultError) in
            try vault.changePassphrase(to: newPassphrase, limits: source.limits, keySource: source)
        }
    }
}
