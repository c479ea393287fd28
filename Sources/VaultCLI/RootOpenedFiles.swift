import Vault
import VaultSystem

/// The files of a backup that root names when it acts as a vault's owner (`VaultOwner`): `export`'s
/// output and `import`'s input, and the `--backup-key-file` of either. Root opens (or, for the output,
/// creates) them before it takes the owner's identity, as it reads the master key file: a backup key
/// that only root can read, and a backup in a directory only root can write, are root's to use. Only
/// paths that no one but root can change are opened so (`isRootsOnly`): where another user could, that
/// user could point it anywhere root can reach, so the command opens it as the owner, afterwards.
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

    /// Whether only root can change what `path` leads to: every component that exists (from `/`, a
    /// relative path from the working directory) is root's, no directory on the way is writable by
    /// group or others unless it is sticky (`/tmp`: others cannot replace root's entries), and none is
    /// a symbolic link (whose target is not looked at). Then nothing can be swapped between this check
    /// and root's open; anything else is opened as the owner, after the switch.
    static func isRootsOnly(_ path: String) -> Bool {
        var absolute = path
        if !path.hasPrefix("/") {
            guard let cwd = try? FileDescriptor.resolvedPath(".") else { return false }
            absolute = cwd + "/" + path
        }
        var prefix = FilePath("/")
        var components =
            [""] + FilePath(absolute).removingTrailingSeparators.string.split(separator: "/").map(String.init)
        components.removeAll { $0 == "." }
        for component in components {
            if !component.isEmpty { prefix = prefix / component }
            guard let status = try? FileDescriptor.currentWorkingDirectory.statusAt(prefix.string) else {
                return true  // the rest does not exist: root makes it
            }
            guard status.ownerID == 0, status.kind != .symbolicLink else { return false }
            if status.kind == .directory, status.permissions.rawValue & FilePermissions.groupOrOtherWrite.rawValue != 0,
                !status.isSticky
            {
                return false
            }
        }
        return true
    }

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
    /// On a failure the file is emptied (the export says it is left: only root can remove it).
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
            throw CLIError(.io, output.path, "cannot write the backup: \(error)")
        }
    }
}
