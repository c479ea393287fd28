import Vault
import VaultSystem

/// `vault rekey`: a new master key; every key file sealed again under it, in place.
package struct RekeyCommand: Sendable, Hashable {
    /// `--kdf-cost`: the Argon2id cost of the new wrapping (passphrase vaults).
    package var cost: KeyDerivationCost
    /// `--new-key-file PATH`: where the new key of a key-file vault goes.
    package var newKeyFile: String?

    static let info = CommandInfo(
        name: "rekey",
        synopsis: "vault rekey [--kdf-cost COST]\n       vault rekey --key-file OLD --new-key-file NEW",
        summary: "rotate the master key (every key file sealed again, items as they are)",
        details: """
            Makes a new master key and seals the vault's key files again under it. A passphrase
            vault asks for its passphrase, then for the passphrase of the new key (twice), or reads them
            from --passphrase-fd N, one per line. A vault whose key is in an external key file (opened
            with --key-file, VAULT_KEY_FILE or a systemd credential) needs --new-key-file NEW: NEW is
            created (0600, in an existing directory) when it does not exist, or is a 32-byte key file
            you made (refused when group or others can read it). Once it succeeds only NEW opens the
            vault: point every user at it (systemd: LoadCredential=vault.key:NEW, then restart the
            service). The old file is left in place; keep it until the rekey has succeeded. Crash-safe:
            a kill at any point leaves a vault that opens with the old key or the new one, with every
            item (the next command, given either key file, finishes or undoes the switch). Processes that
            hold the vault open must reopen it; `vault unlock` again. The items stay as they are: the key
            files (classes.key and every group's group.key) are sealed again
            under the new key, in place, no directory moved; members of shared groups keep reading.
            To lock out an old copy of the master key from what is written next, also rotate each
            group (`vault group rotate NAME`).
            """,
        options: [
            KeyDerivationCost.spec,
            .value("new-key-file", "PATH", "the new key file of a vault whose key is in an external file"),
        ],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "rekey")
            let newKeyFile = parsed.value("new-key-file")
            if newKeyFile?.isEmpty == true {
                throw UsageError("--new-key-file needs a path, not an empty string", command: "rekey")
            }
            return .rekey(
                RekeyCommand(cost: try KeyDerivationCost.parse(parsed, command: "rekey"), newKeyFile: newKeyFile))
        })

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        var source = context.keySource(limits: cost.limits)
        // The unlock cache holds class keys, not the master key that a rekey needs.
        source.usesUnlockCache = false
        if let newKeyFile, source.keyFile == nil {
            throw CLIError(
                .usage, newKeyFile,
                "--new-key-file rekeys a vault whose key is in an external file; give the current one with "
                    + "--key-file (or VAULT_KEY_FILE), or run `vault rekey` without --new-key-file for master.key")
        }
        if newKeyFile == nil, let keyFile = source.keyFile {
            throw CLIError(
                .usage, path,
                "the vault's key is in the external file \(keyFile); give the new key file with --new-key-file PATH")
        }
        let vault = try context.openVault(at: path, keySource: source)
        if let newKeyFile {
            try context.attempt(vault, path) { () throws(VaultError) in
                try vault.rekey(newKeyFile: newKeyFile, keySource: source)
            }
            // The one thing an operator must act on: every later open needs the new file.
            context.writeError(
                "vault: \(path): rekeyed; only \(newKeyFile) opens it now (give it with --key-file, VAULT_KEY_FILE or "
                    + "LoadCredential=\(KeySource.credentialName):\(newKeyFile), then restart the services that use "
                    + "the vault); the old key file opens nothing any more\n")
            return
        }
        var newPassphrase: SecureBytes?
        if vault.isPassphraseProtected {
            newPassphrase = try context.passphrase(
                PassphraseRequest(.newPassphrase, for: vault.masterKeyPath), subject: path)
        }
        try context.attempt(vault, path) { () throws(VaultError) in
            try vault.rekey(newPassphrase: newPassphrase, limits: cost.limits, keySource: source)
        }
    }
}
