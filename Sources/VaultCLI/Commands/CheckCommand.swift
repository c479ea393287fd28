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
            A group whose `group.key` cannot be read (missing or damaged) is reported once, by that
            file: its items are not checked, and never removed. Silent when all are sound. --json
            prints {"groups", "items", "versions", "damaged": [{"path", "group", "reason", "kind"}]},
            kind "item", "version" or "group".
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
            /// "item", "version", or "group" (the group could not be checked: `path` is its key file or
            /// directory).
            var kind: String
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
            let damaged = report.problems.map {
                JSON.Damaged(
                    path: $0.path, group: $0.group, reason: $0.reason,
                    kind: $0.concernsGroup ? "group" : $0.isKeptVersion ? "version" : "item")
            }
            try context.write(
                try Output.json(
                    JSON(
                        groups: report.groupCount, items: report.itemCount, versions: report.versionCount,
                        damaged: damaged,
                        removed: removeDamaged ? removed.map(\.path) : nil)))
        }
        guard !report.problems.isEmpty else { return }
        let failed = Self.summary(report)
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
            removed.isEmpty
            ? "\(failed); nothing was removed"
            : "\(failed); removed \(removed.count) damaged (their secrets are lost: put them again or import them "
                + "from a backup)"
        guard remaining.isEmpty else {
            throw CLIError(ExitCode(problems: remaining), "check", summary + "; \(remaining.count) remain")
        }
        context.writeError(CLIError(.success, "check", summary))
    }

    /// "N of M item files and K of L kept versions failed verification", and the groups that could not
    /// be checked at all (named above, each once, with the reason).
    static func summary(_ report: VerificationReport) -> String {
        let groups = report.problems.filter(\.concernsGroup).map(\.group)
        let versionProblems = report.problems.filter(\.isKeptVersion).count
        let itemProblems = report.problems.count - versionProblems - groups.count
        var parts: [String] = []
        if itemProblems > 0 || groups.isEmpty {
            var failed = "\(itemProblems) of \(report.itemCount) item files"
            if versionProblems > 0 { failed += " and \(versionProblems) of \(report.versionCount) kept versions" }
            parts.append(failed + " failed verification")
        } else if versionProblems > 0 {
            parts.append("\(versionProblems) of \(report.versionCount) kept versions failed verification")
        }
        if !groups.isEmpty {
            let names = groups.joined(separator: ", ")
            parts.append(
                (groups.count == 1 ? "group \(names) was" : "groups \(names) were")
                    + " not checked: its items cannot be read until the file named above is restored or put right")
        }
        return parts.joined(separator: "; ")
    }
}
