/// What to say when a command of HashiCorp Vault's CLI (also called `vault`) is given to this one: that
/// this is not HashiCorp Vault, and what to run here instead.
enum HashiCorpHints {
    /// The refusal of unknown command `name`, with a hint when it is one of HashiCorp Vault's.
    static func unknownCommand(_ name: String) -> String {
        guard let instead = hints[name] else { return "unknown command '\(name)'" }
        return "unknown command '\(name)': this is vault, the keychain for Linux, not HashiCorp Vault (whose CLI "
            + "is also called vault; run it by its full path); \(instead)"
    }

    /// HashiCorp Vault's commands a habit may bring here, and what does the job in this vault.
    static let hints: [String: String] = [
        "kv":
            "here secrets are read with `vault get SERVICE [ACCOUNT]`, stored with `vault put`, listed with `vault ls`",
        "read": "here a secret is read with `vault get SERVICE [ACCOUNT]`",
        "write": "here a secret is stored with `vault put SERVICE [ACCOUNT]` (the secret on standard input)",
        "delete": "here a secret is removed with `vault rm SERVICE [ACCOUNT]`",
        "list": "here secrets are listed with `vault ls`",
        "status": "`vault check` verifies every item here, and `vault group ls` lists the groups",
        "login": "there is no login here: the vault is the Unix user's, and a passphrase vault is opened with "
            + "`vault unlock`",
        "version": "`vault --version` prints this one's version",
        "secrets": "here secrets live in access groups: `vault group ls`",
        "token": "there are no tokens here: the vault is the Unix user's",
        "server": "this vault runs no server",
        "operator": "`vault init` makes a vault here, and `vault rekey` rotates its key",
    ]
}
