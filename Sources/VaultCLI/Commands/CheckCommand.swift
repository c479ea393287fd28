import Vault

/// `vault check`: decrypts and verifies every item file.
public struct CheckCommand: Sendable, Hashable {
    /// `--json`.
    public var json: Bool

    static let info = CommandInfo(
        name: "check",
        synopsis: "vault check [--json]",
        summary: "verify every item file",
        details: """
            Decrypts and verifies every item file in every group (whatever groups the client has; no
            content is shown). Each damaged file is reported on standard error as `vault: PATH: why`,
            and the exit status is 6 (or that of the failure when no file failed authentication: 4 for
            an unsafe file, 7 for an input/output error, 5 for a file whose class key is locked).
            Silent when all are sound. --json prints
            {"groups", "items", "damaged": [{"path", "group", "reason"}]}.
            """,
        options: [.flag("json", "print the result as JSON")],
        make: { parsed throws(UsageError) in
            _ = try parsed.operands([], minimum: 0, command: "check")
            return .check(CheckCommand(json: parsed.flag("json")))
        })

    struct JSON: Encodable {
        struct Damaged: Encodable {
            var path: String
            var group: String
            var reason: String
        }
        var groups: Int
        var items: Int
        var damaged: [Damaged]
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let report = try context.attempt(vault, "check") { () throws(VaultError) in try vault.verifyAll() }
        if json {
            let damaged = report.problems.map { JSON.Damaged(path: $0.path, group: $0.group, reason: $0.reason) }
            try context.write(
                try Output.json(JSON(groups: report.groupCount, items: report.itemCount, damaged: damaged)))
        }
        try context.report(
            report.problems, command: "check",
            summary: "\(report.problems.count) of \(report.itemCount) item files failed verification")
    }
}
