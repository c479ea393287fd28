import Vault

/// `vault unlock`: asks for the passphrase once and keeps the unwrapped key in the kernel keyring for
/// a while, so that the commands and services of this user that follow need no passphrase.
public struct UnlockCommand: Sendable, Hashable {
    /// How long the key stays cached, in seconds; 0 is until reboot (or `vault lock`).
    public var timeoutSeconds: UInt32

    static let info = CommandInfo(
        name: "unlock",
        synopsis: "vault unlock [--timeout DURATION]",
        summary: "cache the unwrapped key in the kernel keyring",
        details: """
            Asks for the passphrase of master.key (or reads it from --passphrase-fd N) and keeps the
            unwrapped key in the kernel keyring of this user for DURATION (default 15m; units s, m, h, d;
            0 keeps it until reboot or `vault lock`). Processes of the same user then open the vault
            without the passphrase. Where the kernel keyring is not available (a seccomp profile forbids
            it) this fails with exit status 7, and each process can still be given the passphrase.
            """,
        options: [.value("timeout", "DURATION", "how long the key stays cached (default 15m; 0: until reboot)")],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "unlock")
            return .unlock(UnlockCommand(timeoutSeconds: try duration(parsed.value("timeout") ?? "15m")))
        })

    /// Parses "90", "90s", "15m", "2h", "1d".
    static func duration(_ text: String) throws(UsageError) -> UInt32 {
        let units: [Character: UInt64] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var digits = Substring(text)
        var unit: UInt64 = 1
        if let last = text.last, let factor = units[last] {
            unit = factor
            digits = digits.dropLast()
        }
        guard let value = UInt64(digits), value <= UInt64(UInt32.max) / unit else {
            throw UsageError("--timeout is a duration such as 90s, 15m, 2h or 0, not \"\(text)\"", command: "unlock")
        }
        return UInt32(value * unit)
    }

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        do {
            try Vault.unlock(at: path, keySource: context.keySource(), timeoutSeconds: timeoutSeconds)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
    }
}

/// `vault lock`: drops the key that `vault unlock` cached.
public struct LockCommand: Sendable, Hashable {
    static let info = CommandInfo(
        name: "lock",
        synopsis: "vault lock",
        summary: "drop the cached key from the kernel keyring",
        details: """
            Removes the key that `vault unlock` cached, so that the next process needs the passphrase
            again. Processes that already opened the vault keep working until they exit.
            """,
        options: [],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "lock")
            return .lock(LockCommand())
        })

    func run(in context: Context) throws(CLIError) {
        let path = try context.vaultPath()
        do {
            try Vault.lock(at: path)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
    }
}
