import Vault
import VaultSystem

/// `vault unlock`: asks for the passphrase once and keeps the unwrapped key in the kernel keyring for
/// a while, so that the commands and services of this user that follow need no passphrase.
package struct UnlockCommand: Sendable, Hashable {
    /// How long the key stays cached, in seconds; 0 is until reboot (or `vault lock`).
    package var timeoutSeconds: UInt32

    static let info = CommandInfo(
        name: "unlock",
        synopsis: "vault unlock [--timeout DURATION]",
        summary: "cache the unwrapped key in the kernel keyring",
        details: """
            Asks for the passphrase of master.key (or reads it from --passphrase-fd N) and keeps the
            class keys it unwraps in the kernel keyring of this user: the WhenUnlocked key (the class of
            `vault put`'s items) for DURATION (default 15m; units s, m, h, d; 0 keeps it until reboot or
            `vault lock`), the AfterFirstUnlock key until reboot or `vault lock --all`. Processes of the
            same user then open the vault without the passphrase. A vault without a passphrase (a plain
            master.key or an external key file) has nothing to unlock: that is said on standard error,
            nothing is cached, and the exit status is 0. Where the kernel keyring is not available (a
            seccomp profile forbids it) this fails with exit status 7, and each process can still be
            given the passphrase. The keyring of a user other than root holds at most 200 keys and
            20000 bytes by default (/proc/sys/kernel/keys/maxkeys, maxbytes); each unlocked vault
            takes two keys, and `vault lock --all` drops them all.
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
        let source = context.keySource()
        let outcome: UnlockOutcome
        do {
            outcome = try Vault.unlock(at: path, keySource: source, timeoutSeconds: timeoutSeconds)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
        if outcome == .noPassphrase {
            let key = source.keyFile.map { "the key file \($0)" } ?? FilePath(path).appending("master.key").string
            context.writeError(
                "vault: \(path): nothing to unlock: the vault has no passphrase (its key is in \(key), which opens it "
                    + "for every process that can read it); nothing was cached\n")
        }
    }
}

/// `vault lock`: drops keys that `vault unlock` cached.
package struct LockCommand: Sendable, Hashable {
    /// `--all`: every cached key of every vault, AfterFirstUnlock keys too.
    package var all = false

    static let info = CommandInfo(
        name: "lock",
        synopsis: "vault lock [--all]",
        summary: "drop cached keys from the kernel keyring",
        details: """
            Removes the WhenUnlocked key that `vault unlock` cached for the vault: its WhenUnlocked items
            (the class of `vault put`'s items, and the default) need the passphrase again. What stays
            unlocked: AfterFirstUnlock items (such as `vault uuid`'s identifiers), whose key stays until
            reboot as on Apple devices, and Always items, which never need the passphrase. With --all,
            every cached key of every vault of this user is dropped, the AfterFirstUnlock keys too,
            including those of vaults that no longer exist (no vault is needed): then only Always items
            open without the passphrase. Processes that already opened a vault keep the keys they have
            until they exit.
            """,
        options: [.flag("all", "drop every cached key of every vault, AfterFirstUnlock keys too")],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "lock")
            return .lock(LockCommand(all: parsed.flag("all")))
        })

    func run(in context: Context) throws(CLIError) {
        if all {
            do {
                try Vault.lockEveryVault()
            } catch {
                throw CLIError(ExitCode(error.status), "lock --all", error.message)
            }
            return
        }
        let path = try context.vaultPath()
        do {
            try Vault.lock(at: path)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
    }
}
