import Vault
import VaultSystem

/// `vault check`: decrypts and verifies every item file.
package struct CheckCommand: Sendable, Hashable {
    /// `--json`.
    package var json: Bool
    /// `--remove-damaged`: remove the files that fail authentication, after listing them.
    package var removeDamaged = false

    static let info = CommandInfo(
        name: "check",
        synopsis: "vault check [--json] [--remove-damaged]",
        summary: "verify every item file",
        details: """
            Decrypts and verifies every item file in every group (whatever groups the client has; no
            content is shown), and every kept version of an item (its history; not a fleet group's, which
            etcd keeps). Each damaged file is reported on standard error as `vault: PATH: why`,
            and the exit status is 6 (or that of the failure when no file failed authentication: 4 for
            an unsafe file, 7 for an input/output error, 5 for a file whose class key is locked).
            Silent when all are sound. --json prints
            {"groups", "items", "versions", "damaged": [{"path", "group", "reason"}]}.
            A damaged item cannot be read: `vault put SERVICE [ACCOUNT]` replaces it, `vault rm SERVICE
            [ACCOUNT]` removes it, and --remove-damaged removes, after listing them, every file that
            fails authentication (their secrets are lost: put them again, or `vault import --replace`
            them from a backup), with "removed": [paths] in the JSON; the exit status is then that of
            what remains (0 when nothing does). Files that are locked, unreadable, unsafe or of a newer
            format are never removed.
            """,
        options: [
            .flag("json", "print the result as JSON"),
            .flag("remove-damaged", "remove the item files that fail authentication, after listing them"),
        ],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "check")
            return .check(CheckCommand(json: parsed.flag("json"), removeDamaged: parsed.flag("remove-damaged")))
        })

    struct JSON: Encodable {
        struct Damaged: Encodable {
            var path: String
            var group: String
            var reason: String
        }
        var groups: Int
        var items: Int
        var versions: Int
        var damaged: [Damaged]
        var removed: [String]?
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let report = try context.attempt(vault, "check") { () throws(VaultError) in try vault.verifyAll() }
        // Listed first: whatever the removal then does, the operator has seen every file it may touch.
        context.list(report.problems)
        var removed: [ItemProblem] = []
        if removeDamaged {
            removed = try context.attempt(vault, "check") { () throws(VaultError) in
                try vault.removeDamaged(report.problems)
            }
        }
        if json {
            let damaged = report.problems.map { JSON.Damaged(path: $0.path, group: $0.group, reason: $0.reason) }
            try context.write(
                try Output.json(
                    JSON(
                        groups: report.groupCount, items: report.itemCount, versions: report.versionCount,
                        damaged: damaged,
                        removed: removeDamaged ? removed.map(\.path) : nil)))
        }
        guard !report.problems.isEmpty else { return }
        let versionProblems = report.problems.filter(\.isKeptVersion).count
        var failed = "\(report.problems.count - versionProblems) of \(report.itemCount) item files"
        if versionProblems > 0 { failed += " and \(versionProblems) of \(report.versionCount) kept versions" }
        failed += " failed verification"
        guard removeDamaged else {
            var summary = failed
            if report.problems.contains(where: \.failedAuthentication) {
                summary +=
                    "; `vault check --remove-damaged` removes the damaged ones, `vault rm SERVICE [ACCOUNT]` one "
                    + "item, `vault put` replaces it"
            }
            throw CLIError(ExitCode(problems: report.problems), "check", summary)
        }
        let removedPaths = Set(removed.map(\.path))
        let remaining = report.problems.filter { !removedPaths.contains($0.path) }
        let summary =
            "\(failed); removed \(removed.count) damaged (their secrets are lost: put them again or import them from "
            + "a backup)"
        guard remaining.isEmpty else {
            throw CLIError(ExitCode(problems: remaining), "check", summary + "; \(remaining.count) remain")
        }
        context.writeError(CLIError(.success, "check", summary))
    }
}
