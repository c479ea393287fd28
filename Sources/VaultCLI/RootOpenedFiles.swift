import Vault
import VaultSystem

/// The files of a backup that root names when it acts as a vault's owner (`VaultOwner`): `export`'s
/// output and `import`'s input, and the `--backup-key-file` of either. Root opens (or, for the output,
/// creates) them before it takes the owner's identity, as it reads the master key file: a backup key
/// that only root can read, and a backup in a directory only root can write, are root's to use. Only
/// paths on which no other user owns a directory (or the file) are opened so: where the owner owns one,
/// the owner could point it anywhere root can reach, so the command opens it as the owner, afterwards.
struct RootOpenedFiles {
    /// The backup key, read as root.
    var backupKey: BackupKey?
    /// `export`'s new output file, made by root (0600, root's), and the directory it is in (to flush).
    var exportOutput: (file: FileDescriptor, directory: FileDescriptor, path: String)?
    /// `import`'s input file, opened by root.
    var importInput: FileDescriptor?

    /// Nothing opened: the command opens its files itself.
    static let none = RootOpenedFiles()

    /// What `command` names, opened as root (the process's identity now).
    static func open(for command: Command) throws(CLIError) -> RootOpenedFiles {
        var files = RootOpenedFiles()
        switch command {
        case .export(let export):
            files.backupKey = try export.backupKeyFile.flatMap(rootKey)
            if export.path != BackupOptions.stream, isRootsOnly(FilePath(export.path).parent.string) {
                files.exportOutput = try createOutput(export.path)
            }
        case .importBackup(let backup):
            files.backupKey = try backup.backupKeyFile.flatMap(rootKey)
            if backup.path != BackupOptions.stream, isRootsOnly(backup.path) {
                do {
                    files.importInput = try FileDescriptor.currentWorkingDirectory.openAt(backup.path, .readOnly)
                } catch {
                    throw CLIError(exitCode(error), backup.path, "cannot open it: \(error)")
                }
            }
        default: break
        }
        return files
    }

    static func exitCode(_ error: Errno) -> ExitCode {
        error == .permissionDenied || error == .notPermitted ? .accessDenied : .io
    }

    /// Whether no user but root owns a directory (or the file) on the way to `path`.
    static func isRootsOnly(_ path: String) -> Bool { VaultLocation.owners(along: path).isEmpty }

    /// The backup key file at `path`, read as root when the path is root's only; nil otherwise.
    static func rootKey(_ path: String) throws(CLIError) -> BackupKey? {
        isRootsOnly(path) ? try BackupOptions.load(path) : nil
    }

    /// Makes the new file `path` (never over an existing one, never through a link in its last
    /// component), 0600.
    static func createOutput(_ path: String) throws(CLIError) -> (FileDescriptor, FileDescriptor, String) {
        let file = FilePath(path)
        do throws(Errno) {
            let directory = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(file.parent.string)
            do throws(Errno) {
                let output = try directory.openAt(
                    file.lastComponent, [.writeOnly, .create, .exclusiveCreate], permissions: .ownerReadWrite)
                return (output, directory, path)
            } catch {
                try? directory.close()
                throw error
            }
        } catch  where error == .fileExists {
            throw CLIError(.duplicate, path, "it already exists; a backup never overwrites a file")
        } catch {
            throw CLIError(exitCode(error), path, "cannot make it: \(error)")
        }
    }

    /// Writes the sealed backup to the file root made, durably (the file, then its directory entry).
    /// On a failure the file is emptied and said to be left: only root can remove it.
    static func write(_ sealed: [UInt8], to output: (file: FileDescriptor, directory: FileDescriptor, path: String))
        throws(CLIError)
    {
        defer {
            try? output.file.close()
            try? output.directory.close()
        }
        do {
            try output.file.writeAll(sealed)
            try output.file.sync()
            try output.directory.sync()
        } catch {
            try? output.file.truncate(to: 0)
            throw CLIError(.io, output.path, "cannot write the backup: \(error); the file is left empty: remove it")
        }
    }
}
