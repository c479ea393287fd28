import Vault
import VaultSystem

/// `vault group export-key NAME FILE`: a fleet group's key as a file, to join the group on another
/// machine with.
package struct GroupExportKeyCommand: Sendable, Hashable {
    /// The fleet group.
    package var group: AccessGroup
    /// The new key file.
    package var path: String
    /// `--backup-key-file K`: seal it under that key file instead of a passphrase.
    package var backupKeyFile: String? = nil

    static let info = CommandInfo(
        name: "export-key",
        synopsis: "vault group export-key NAME FILE [--backup-key-file K]",
        summary: "write the key of a fleet group to a new file, for other machines to join with",
        details: """
            Writes the key of fleet group NAME (made with `vault group create NAME --etcd …`) to FILE, a
            new file (0600; an existing file is never written over, exit status 3), sealed under a new
            passphrase (Argon2id and XChaCha20-Poly1305; asked twice on the terminal or read from
            --passphrase-fd N) or, with --backup-key-file K, under the 32 bytes of K. Whoever holds FILE
            and opens it reads every item of the group: send the passphrase (or K) apart from FILE, and
            delete the copies once the machines joined (`vault group join NAME --etcd … --group-key
            FILE`). Run it as the vault's owner. A group that does not exist is exit status 1; one that
            is not a fleet group, 2.
            """,
        options: [.value("backup-key-file", "K", "seal FILE under the 32-byte key file K instead of a passphrase")],
        operands: [OperandSpec("NAME"), OperandSpec("FILE", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["NAME", "FILE"], minimum: 2, command: "group export-key")
            let group: AccessGroup
            do throws(VaultError) {
                group = try AccessGroup(operands[0])
            } catch {
                throw UsageError(error.message, command: "group export-key")
            }
            guard !operands[1].isEmpty else { throw UsageError("FILE is empty", command: "group export-key") }
            var command = GroupExportKeyCommand(group: group, path: operands[1])
            command.backupKeyFile = try BackupOptions.keyFile(parsed, command: "group export-key")
            return .groupExportKey(command)
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        // A group that is missing or not a fleet group is refused before a passphrase is asked for, with
        // the error the export itself gives.
        if !Vault.isFleetGroup(vaultPath: vault.path, group: group) {
            do {
                _ = try vault.exportFleetGroupKey(group)
            } catch {
                throw GroupCommand.failure(error, command: "group export-key", vaultPath: vault.path)
            }
        }
        let key: BackupKey
        if let backupKeyFile {
            key = try BackupOptions.load(backupKeyFile)
        } else {
            key = .passphrase(
                try context.passphrase(PassphraseRequest(.sealBackup, for: "the key file \(path)"), subject: path))
        }
        do {
            try vault.exportFleetGroupKey(group, to: path, sealedWith: key)
        } catch {
            throw GroupCommand.failure(error, command: "group export-key", vaultPath: vault.path)
        }
        let sealed = backupKeyFile.map { "sealed under \($0)" } ?? "sealed under its passphrase"
        context.writeError(
            "vault: wrote the key of fleet group \(group) to \(path) (0600, \(sealed); it opens every item of it)\n")
    }
}
