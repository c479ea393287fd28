/// How the completion scripts get service names, the same in every shell: `vault ls` with the vault
/// and client options of the line, reduced to the services of generic passwords.
enum ServiceNames {
    /// The shell command; `arguments` expands to the vault and client options (`"$@"`, `$argv`).
    ///
    /// Completion runs while the user types, so it must never wait for a passphrase: with
    /// `--passphrase-fd 0` and standard input from /dev/null, a vault that needs one gets an end of
    /// file and fails at once (exit 5), where it would otherwise prompt on /dev/tty, which standard
    /// input redirections do not reach. Errors go to /dev/null: a completion prints no messages.
    static func command(arguments: String) -> String {
        "command vault \(arguments) --passphrase-fd 0 ls </dev/null 2>/dev/null"
            + " | awk -F '\\t' '$1 == \"generic\" { print $2 }' | sort -u"
    }

    /// The shells' comment above the function that runs `command`.
    static let comment = """
        # Service names from `vault ls` with the vault and client options given. Never waits for a
        # passphrase: it is read from standard input, /dev/null, so a locked vault fails at once
        # instead of prompting on the terminal.
        """
}
