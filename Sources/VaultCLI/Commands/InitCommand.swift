import Vault
import VaultSystem

/// `vault init`: creates the vault; refuses to touch an existing one.
package struct InitCommand: Sendable, Hashable {
    static let info = CommandInfo(
        name: "init",
        synopsis: "vault init",
        summary: "create a new vault",
        details: """
            Creates the vault directory (0700), its master key (0600) and its marker. An existing vault is
            never touched: that is exit status 3. With --passphrase, master.key holds the key wrapped under
            a passphrase (Argon2id, then asked for by every command); with --key-file PATH the key goes to
            (or is taken from) that file instead of master.key. The directory is --vault DIR, else
            $VAULT_DIR, else /var/lib/vault for root, else $XDG_DATA_HOME/vault (~/.local/share/vault). Each
            access group gets its own key, and a group can be shared with the members of a Unix group
            (`vault group create`). It says on standard error where it made the vault and its key.
            """,
        options: [
            .flag(
                "passphrase",
                "protect master.key with a passphrase (Argon2id), asked twice or read from --passphrase-fd"),
            KeyDerivationCost.spec,
        ],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "init")
            return .initialize(
                InitCommand(
                    passphrase: parsed.flag("passphrase"), cost: try KeyDerivationCost.parse(parsed, command: "init")))
        })

    /// `--passphrase`: wrap the new master key under a passphrase.
    package var passphrase = false
    /// `--kdf-cost`: the Argon2id cost of the wrapping.
    package var cost = KeyDerivationCost.moderate

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        let client = try context.client()
        // Before anything is created: a prompt that cannot be shown would leave a directory and a lock
        // file behind, and the next init would find them.
        if passphrase, !context.passphrases.canAsk {
            throw CLIError(
                .usage, "init",
                "--passphrase needs a terminal or --passphrase-fd N to read the new passphrase from; nothing was "
                    + "created")
        }
        var source = context.keySource(limits: cost.limits)
        if !passphrase { source.passphrase = nil }
        let vault: Vault
        do {
            vault = try Vault.create(at: path, client: client, keySource: source)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
        // Where it went: the default location depends on who runs it ($VAULT_DIR, root, XDG).
        let key =
            if let keyFile = source.keyFile {
                "its master key in \(keyFile), not in the vault: give it with --key-file or VAULT_KEY_FILE"
            } else if vault.isPassphraseProtected {
                "its master key in \(vault.masterKeyPath), wrapped under the passphrase"
            } else {
                "its master key in \(vault.masterKeyPath)"
            }
        context.writeError("vault: created a vault at \(path) (\(key))\n")
    }
}
