import Vault
import VaultCrypto
import VaultStore

/// `vault export FILE`: a passphrase-encrypted backup of every item.
public struct ExportCommand: Sendable, Hashable {
    /// Where the backup goes (a new file).
    public var path: String
    /// `--kdf-cost`.
    public var cost: KeyDerivationCost

    static let info = CommandInfo(
        name: "export",
        synopsis: "vault export [--kdf-cost COST] FILE",
        summary: "write a passphrase-encrypted backup of every item",
        details: """
            Writes every item of every group to FILE (which must not exist; 0600), sealed under a new
            passphrase (Argon2id + XChaCha20-Poly1305), asked twice on the terminal or read from
            --passphrase-fd N (after the vault's own passphrase, if it has one). Items that are
            …ThisDeviceOnly never leave the device: they are left out, and the count is reported on
            standard error with the count exported.
            """,
        options: [KeyDerivationCost.spec],
        operands: [OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["FILE"], minimum: 1, command: "export")
            return .export(
                ExportCommand(path: operands[0], cost: try KeyDerivationCost.parse(parsed, command: "export")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let passphrase = try context.passphrase("new passphrase for the backup \(path)", subject: path)
        let report = try context.attempt(vault, path) { () throws(VaultError) in
            try vault.export(to: path, passphrase: passphrase, limits: cost.limits)
        }
        context.writeError(
            "vault: exported \(Output.count(report.exported, "item")) to \(path)"
                + (report.leftOut > 0 ? "; left out \(Output.count(report.leftOut, "…ThisDeviceOnly item"))\n" : "\n"))
    }
}

/// `vault import FILE`: adds the items of a backup.
public struct ImportCommand: Sendable, Hashable {
    /// The backup.
    public var path: String
    /// `--replace`: overwrite existing items instead of reporting them.
    public var replace: Bool

    static let info = CommandInfo(
        name: "import",
        synopsis: "vault import [--replace] FILE",
        summary: "add the items of a backup made by `vault export`",
        details: """
            Adds the items of the backup FILE with their attributes, dates and persistent references.
            An item that exists already is reported and left alone (exit status 3 when any was), unless
            --replace overwrites it. The backup's passphrase is asked on the terminal or read from
            --passphrase-fd N (after the vault's own passphrase, if it has one).
            """,
        options: [.flag("replace", "overwrite existing items instead of reporting them")],
        operands: [OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["FILE"], minimum: 1, command: "import")
            return .importBackup(ImportCommand(path: operands[0], replace: parsed.flag("replace")))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        do {
            try Vault.inspectBackup(at: path)
        } catch {
            throw CLIError(ExitCode(error.status), path, error.message)
        }
        let passphrase = try context.passphrase("passphrase for the backup \(path)", subject: path)
        let report = try context.attempt(vault, path) { () throws(VaultError) in
            try vault.importBackup(from: path, passphrase: passphrase, replace: replace)
        }
        var summary = "vault: imported \(Output.count(report.imported, "item")) from \(path)"
        if report.replaced > 0 { summary += ", replaced \(report.replaced)" }
        if !report.duplicates.isEmpty {
            let were = report.duplicates.count == 1 ? "was" : "were"
            summary += "; \(report.duplicates.count) already existed and \(were) left alone (use --replace):"
            // One write per line: each is escaped on its own, and a name cannot add a line.
            context.writeError(summary + "\n")
            for duplicate in report.duplicates { context.writeError("  \(duplicate)\n") }
            throw CLIError(.duplicate, path, "\(Output.count(report.duplicates.count, "item")) not imported")
        }
        context.writeError(summary + "\n")
    }
}
