import Vault

/// `vault init`: creates the vault; refuses to touch an existing one.
public struct InitCommand: Sendable, Hashable {
    static let info = CommandInfo(
        name: "init",
        synopsis: "vault init",
        summary: "create a new vault",
        details: """
            Creates the vault directory (0700), its master key (0600) and its marker. An existing vault
            is never touched: that is exit status 3. The directory is --vault DIR, else $VAULT_DIR, else
            /var/lib/vault for root, else $XDG_DATA_HOME/vault (~/.local/share/vault).
            """,
        options: [],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "init")
            return .initialize(InitCommand())
        })

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        let client = try context.client()
        do {
            _ = try Vault.create(at: path, client: client)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
    }
}
