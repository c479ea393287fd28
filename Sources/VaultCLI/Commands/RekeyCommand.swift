import Vault
import VaultCrypto
import VaultStore

/// `vault rekey`: a new master key, every item re-encrypted.
public struct RekeyCommand: Sendable, Hashable {
    /// `--kdf-cost`: the Argon2id cost of the new wrapping (passphrase vaults).
    public var cost: KeyDerivationCost

    static let info = CommandInfo(
        name: "rekey",
        synopsis: "vault rekey [--kdf-cost COST]",
        summary: "rotate the master key and re-encrypt every item",
        details: """
            Makes a new master key (and class keys) and re-encrypts every item under it. A passphrase
            vault asks for its passphrase, then for the passphrase of the new key (twice), or reads them
            from --passphrase-fd N, one per line. Crash-safe: a kill at any point leaves a vault that
            opens with the old key or the new one, with every item (the next command finishes or undoes
            the switch). Processes that hold the vault open must reopen it; `vault unlock` again.
            """,
        options: [KeyDerivationCost.spec],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "rekey")
            return .rekey(RekeyCommand(cost: try KeyDerivationCost.parse(parsed, command: "rekey")))
        })

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        var source = context.keySource(limits: cost.limits)
        // The unlock cache holds class keys, not the master key that a rekey needs.
        source.usesUnlockCache = false
        let client = try context.client()
        let vault: Vault
        do {
            vault = try Vault.open(at: path, client: client, keySource: source)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
        var newPassphrase: SecureBytes?
        if vault.isPassphraseProtected {
            newPassphrase = try context.passphrase("new passphrase for \(path)/master.key", subject: path)
        }
        try context.attempt(vault, path) { () throws(VaultError) in
            try vault.rekey(newPassphrase: newPassphrase, limits: cost.limits, keySource: source)
        }
    }
}
