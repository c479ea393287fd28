import Vault
import VaultSystem

/// What `--backup-key-file` means for export and import, and what `-` means for FILE.
enum BackupOptions {
    static let keyFileSpec = OptionSpec.value(
        "backup-key-file", "K", "seal (or open) the backup with the 32-byte key file K instead of a passphrase")

    /// The operand `-`: standard output for export, standard input for import.
    static let stream = "-"

    static func keyFile(_ parsed: ParsedArguments, command: String) throws(UsageError) -> String? {
        guard let value = parsed.value("backup-key-file") else { return nil }
        guard !value.isEmpty else {
            throw UsageError("--backup-key-file needs a path, not an empty string", command: command)
        }
        return value
    }

    /// The backup key of `--backup-key-file K`, loaded and checked (32 bytes, 0600).
    static func load(_ path: String) throws(CLIError) -> BackupKey {
        do {
            return try BackupKey.keyFile(path)
        } catch {
            throw CLIError(ExitCode(VaultError(error).status), path, error.message)
        }
    }
}

/// `vault export FILE`: an encrypted backup of every item.
package struct ExportCommand: Sendable, Hashable {
    /// Where the backup goes (a new file), or `-` for standard output.
    package var path: String
    /// `--kdf-cost`.
    package var cost: KeyDerivationCost
    /// `--backup-key-file K`: seal under this key file instead of a passphrase.
    package var backupKeyFile: String? = nil

    static let info = CommandInfo(
        name: "export",
        synopsis: "vault export [--kdf-cost COST | --backup-key-file K] FILE|-",
        summary: "write an encrypted backup of every item",
        details: """
            Writes every item of every group to FILE (which must not exist; 0600), or with - to standard
            output (for a pipe: `vault export - --passphrase-fd 3 3<pass | rclone rcat remote:vault.bak`),
            sealed under a new passphrase (Argon2id + XChaCha20-Poly1305), asked twice on the terminal or
            read from --passphrase-fd N (after the vault's own passphrase, if it has one); or, with
            --backup-key-file K, under the key file K (32 raw bytes, mode 0600, no Argon2id: for cron
            jobs; make it once with `(umask 077 && head -c 32 /dev/urandom > K)` and keep it apart
            from the backups). Items that are …ThisDeviceOnly never leave the device: they are left
            out, and the count is reported on standard error with the count exported, the device
            identifiers of `vault uuid` counted apart. A group with a file that cannot be read (damaged,
            or its group.key missing) is left out whole and named; the backup holds the other groups,
            and the exit status is that failure's (6 for damage). The backup also
            records every group: private, or shared with a Unix group (its gid and name), so
            that `vault import` makes a missing group as it was.
            """,
        options: [KeyDerivationCost.spec, BackupOptions.keyFileSpec],
        operands: [OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["FILE"], minimum: 1, command: "export")
            let keyFile = try BackupOptions.keyFile(parsed, command: "export")
            if keyFile != nil, parsed.value("kdf-cost") != nil {
                throw UsageError(
                    "--kdf-cost is the cost of a passphrase; a backup sealed with --backup-key-file has none",
                    command: "export")
            }
            return .export(
                ExportCommand(
                    path: operands[0], cost: try KeyDerivationCost.parse(parsed, command: "export"),
                    backupKeyFile: keyFile))
        })

    func run(in context: Context) throws(CLIError) {
        let incomplete: CLIError?
        do {
            incomplete = try export(in: context)
        } catch  where context.rootOpened.exportOutput != nil {
            // Root made the file before it became the owner, who cannot remove it.
            let note = "\(path), which root made for the backup, is left empty: remove it as root"
            guard !error.reported else {
                context.writeError("vault: \(note)\n")
                throw error
            }
            throw CLIError(error.code, error.subject, error.message + "; " + note)
        }
        if let incomplete { throw incomplete }
    }

    /// Writes the backup; the failure to say when it left groups out (the backup is written then).
    private func export(in context: Context) throws(CLIError) -> CLIError? {
        let toOutput = path == BackupOptions.stream
        if toOutput, context.output.isTerminal {
            throw CLIError(
                .usage, "export", "standard output is a terminal; pipe or redirect the backup (or give a FILE)")
        }
        let vault = try context.openVault()
        let key: BackupKey
        if let rootKey = context.rootOpened.backupKey {
            key = rootKey
        } else if let backupKeyFile {
            key = try BackupOptions.load(backupKeyFile)
        } else {
            let what = toOutput ? "the backup on standard output" : "the backup \(path)"
            key = .passphrase(
                try context.passphrase(PassphraseRequest(.sealBackup, for: what), subject: path), limits: cost.limits)
        }
        let report: ExportReport
        let destination: String
        if toOutput {
            let sealed = try context.attempt(vault, "export") { () throws(VaultError) in
                try vault.sealedBackup(key: key, leavingOutDamagedGroups: true)
            }
            try context.write(bytes: sealed.bytes)
            report = sealed.report
            destination = "standard output"
        } else if let output = context.rootOpened.exportOutput {
            // The file root made before it became the owner.
            let sealed = try context.attempt(vault, "export") { () throws(VaultError) in
                try vault.sealedBackup(key: key, leavingOutDamagedGroups: true)
            }
            try RootOpenedFiles.write(sealed.bytes, to: output)
            report = sealed.report
            destination = path
        } else {
            report = try context.attempt(vault, path) { () throws(VaultError) in
                try vault.export(to: path, key: key, leavingOutDamagedGroups: true)
            }
            destination = path
        }
        context.writeError(
            "vault: exported \(Output.count(report.exported, "item")) to \(destination)" + Self.leftOut(report) + "\n")
        // One damaged or keyless group does not stop the backup of the others; it is named, and the status
        // says the backup is not whole.
        for file in report.leftOutFiles {
            context.writeError("vault: left out \(file.path), which could not be read: \(file.reason)\n")
        }
        guard let first = report.leftOutGroups.first else {
            guard let file = report.leftOutFiles.first else { return nil }
            return CLIError(
                ExitCode(file.status), "export",
                "\(Output.count(report.leftOutFiles.count, "damaged item file")) left out (see above; `vault check` "
                    + "says more)")
        }
        for left in report.leftOutGroups {
            context.writeError("vault: left out group \(left.group), which the backup does not hold: \(left.reason)\n")
        }
        return CLIError(
            ExitCode(first.status), "export",
            "\(Output.count(report.leftOutGroups.count, "group")) left out (see above; `vault check` names each file)",
            reported: false)
    }

    /// What the backup leaves out, said as what it is: device identifiers (`vault uuid`) stay with the
    /// device by design, other `…ThisDeviceOnly` items because their accessibility says so.
    static func leftOut(_ report: ExportReport) -> String {
        guard report.leftOut > 0 else { return "" }
        let identifiers = report.leftOutDeviceIdentifiers
        let others = report.leftOut - identifiers
        var parts: [String] = []
        if identifiers > 0 {
            parts.append(
                "\(Output.count(identifiers, "device identifier")) of `vault uuid` "
                    + (identifiers == 1
                        ? "(it names this device and never leaves it)" : "(they name this device and never leave it)"))
        }
        if others > 0 { parts.append(Output.count(others, "…ThisDeviceOnly item")) }
        return "; left out " + parts.joined(separator: " and ")
    }
}

/// `vault import FILE`: adds the items of a backup.
package struct ImportCommand: Sendable, Hashable {
    /// The backup, or `-` for standard input.
    package var path: String
    /// `--replace`: overwrite existing items instead of reporting them.
    package var replace: Bool
    /// `--backup-key-file K`: the backup is sealed under this key file.
    package var backupKeyFile: String? = nil

    static let info = CommandInfo(
        name: "import",
        synopsis: "vault import [--replace] [--backup-key-file K] FILE|-",
        summary: "add the items of a backup made by `vault export`",
        details: """
            Adds the items of the backup FILE (with -, read from standard input) with their attributes,
            dates and persistent references. An item that exists already is reported and left alone (exit
            status 3 when any was), unless --replace overwrites it. The backup's passphrase is asked on the
            terminal or read from --passphrase-fd N (after the vault's own passphrase, if it has one; not
            descriptor 0 when the backup comes on standard input); a backup sealed with --backup-key-file K
            needs that key file instead. The backup is checked (size, magic, key derivation and its cost)
            before any passphrase is asked for or the rest of it is read, and is at most 1 GiB. A group the
            backup holds that this vault lacks is made as it was: a shared group shared with the same Unix
            group (found by its name, else its gid), which an unknown Unix group, or an owner
            outside it, stops before anything is imported. Each group made is named on standard error.
            """,
        options: [.flag("replace", "overwrite existing items instead of reporting them"), BackupOptions.keyFileSpec],
        operands: [OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["FILE"], minimum: 1, command: "import")
            return .importBackup(
                ImportCommand(
                    path: operands[0], replace: parsed.flag("replace"),
                    backupKeyFile: try BackupOptions.keyFile(parsed, command: "import")))
        })

    func run(in context: Context) throws(CLIError) {
        let fromInput = path == BackupOptions.stream
        let name = fromInput ? "standard input" : path
        // A file is read as a stream is (root's opened before it became the owner): a streamed backup is
        // then checked whole, frame by frame, before a passphrase is asked for.
        var stream = context.rootOpened.importInput ?? (fromInput ? context.input : nil)
        if fromInput {
            if context.global.passphraseDescriptor == 0 {
                throw CLIError(
                    .usage, "import",
                    "standard input carries the backup; give passphrases on another descriptor (--passphrase-fd 3 "
                        + "3<FILE)")
            }
            if context.input.isTerminal {
                throw CLIError(.usage, "import", "standard input is a terminal; pipe the backup in (or give a FILE)")
            }
        }
        let vault = try context.openVault()
        if stream == nil {
            do {
                try Vault.inspectBackup(at: path)
            } catch {
                throw CLIError(ExitCode(error.status), path, error.message)
            }
            do {
                stream = try FileDescriptor.currentWorkingDirectory.openAt(path, .readOnly)
            } catch {
                throw CLIError(RootOpenedFiles.exitCode(error), path, "cannot open it: \(error)")
            }
        }
        defer { if stream != context.input, let stream { try? stream.close() } }
        // Everything that needs no key is checked first: a file that is no backup, is too large, or asks
        // for too much Argon2id work is refused before a passphrase is asked for or it is read whole.
        var sealed: [UInt8] = []
        var spooled: SpooledBackup?
        let sealing: BackupFile.Sealing
        do throws(VaultError) {
            if let stream {
                let header = try Self.read(stream, exactly: BackupFile.headerByteCount, name: name)
                try Vault.inspectBackup(header: header, name: name)
                if Vault.isStreamedBackup(header: header) {
                    // Copied into a file of the vault's a part at a time: memory does not grow with it.
                    let spool = try vault.spoolBackup(from: stream, header: header, name: name)
                    spooled = spool
                    sealing = spool.sealing
                } else {
                    sealed =
                        header
                        + (try Self.readRest(stream, limit: BackupFile.maximumByteCount - header.count, name: name))
                    sealing = try Vault.checkBackup(sealed, name: name)
                }
            } else {
                throw VaultError(.io, "no backup to read")
            }
        } catch {
            throw CLIError(ExitCode(error.status), fromInput ? "import" : path, error.message)
        }
        let key: BackupKey
        switch (sealing, backupKeyFile) {
        case (.keyFile, nil):
            throw CLIError(
                .usage, name, "the backup is sealed under a backup key file, not a passphrase; give --backup-key-file K"
            )
        case (.passphrase, .some):
            throw CLIError(.usage, name, "the backup is sealed under a passphrase; import it without --backup-key-file")
        case (.keyFile, .some(let file)):
            if let rootKey = context.rootOpened.backupKey {
                key = rootKey
            } else {
                key = try BackupOptions.load(file)
            }
        case (.passphrase, nil):
            key = .passphrase(
                try context.passphrase(PassphraseRequest(.openBackup, for: "the backup \(name)"), subject: name))
        }
        let report = try context.attempt(vault, name) { () throws(VaultError) in
            if let spooled { return try vault.importBackup(spooled, key: key, replace: replace) }
            return try vault.importBackup(sealed: sealed, name: name, key: key, replace: replace)
        }
        // The groups first: a shared group made by an import is something members must be told of.
        for made in report.madeGroups { context.writeError("vault: made \(made)\n") }
        for differing in report.differingGroups { context.writeError("vault: \(differing)\n") }
        var summary = "vault: imported \(Output.count(report.imported, "item")) from \(name)"
        if report.replaced > 0 { summary += ", replaced \(report.replaced)" }
        if !report.duplicates.isEmpty {
            let were = report.duplicates.count == 1 ? "was" : "were"
            summary += "; \(report.duplicates.count) already existed and \(were) left alone (use --replace):"
            // One write per line: each is escaped on its own, and a name cannot add a line.
            context.writeError(summary + "\n")
            for duplicate in report.duplicates { context.writeError("  \(duplicate)\n") }
            throw CLIError(.duplicate, name, "\(Output.count(report.duplicates.count, "item")) not imported")
        }
        context.writeError(summary + "\n")
    }

    /// The first `count` bytes of a stream (fewer only at its end): a backup's header, read before the rest.
    static func read(_ input: FileDescriptor, exactly count: Int, name: String) throws(VaultError) -> [UInt8] {
        do {
            return try input.read(upTo: count)
        } catch {
            throw VaultError(.io, "cannot read \(name): \(error)")
        }
    }

    /// The rest of a stream, at most `limit` bytes.
    static func readRest(_ input: FileDescriptor, limit: Int, name: String) throws(VaultError) -> [UInt8] {
        do {
            return try input.readAll(limit: limit)
        } catch  where error == .fileTooLarge {
            throw VaultError(
                .decode, "\(name) holds more than \(BackupFile.maximumByteCount) bytes: not a vault backup")
        } catch {
            throw VaultError(.io, "cannot read \(name): \(error)")
        }
    }
}
