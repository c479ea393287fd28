internal import CVaultSystem
internal import Glibc

/// A private directory on a memory file system (tmpfs or ramfs) that holds the secrets given to one
/// program, one file per name, as systemd's `$CREDENTIALS_DIRECTORY` does. Nothing of it outlives this
/// process: a remover process, started before the first file is written, deletes the directory's files
/// and the directory once this process ends, however it ends (SIGKILL included), or `remove()` is called.
package final class CredentialDirectory {
    /// The directory's path.
    package let path: String
    private let parent: FileDescriptor
    private let directory: FileDescriptor
    private let remover: pid_t
    private var release: FileDescriptor?

    /// Makes a new directory `vault-run.<random>` (0700) in `parentPath`, which must be on a file system
    /// that keeps files in memory only; `ENOTSUP` when it is not. The error's operation says which step
    /// failed.
    package init(inParent parentPath: String) throws(SystemCallError) {
        let parent: FileDescriptor
        do {
            parent = try FileDescriptor.currentWorkingDirectory.openDirectoryFollowingAt(parentPath)
        } catch {
            throw SystemCallError(systemCall: .open, errno: error)
        }
        self.parent = parent
        var made: String?
        for _ in 0..<16 {
            var random = SystemRandomNumberGenerator()
            let suffix = String(random.next() & 0xFFFF_FFFF_FFFF, radix: 16)
            let candidate = "vault-run." + suffix
            do {
                try parent.makeDirectoryAt(candidate, permissions: .ownerAll)
                made = candidate
                break
            } catch  where error == .fileExists {
                continue
            } catch {
                try? parent.close()
                throw SystemCallError(systemCall: .mkdir, errno: error)
            }
        }
        guard let made else {
            try? parent.close()
            throw SystemCallError(systemCall: .mkdir, errno: .fileExists)
        }
        path = (parentPath.hasSuffix("/") ? parentPath : parentPath + "/") + made
        // The remover first: from here on no way this process ends leaves the directory behind.
        var releaseEnd: Int32 = -1
        let pid = made.withCString { vsys_spawn_directory_remover(parent.rawValue, $0, &releaseEnd) }
        guard pid > 0 else {
            let failure = Errno.current
            try? parent.removeDirectoryAt(made)
            try? parent.close()
            throw SystemCallError(systemCall: .startProcess, errno: failure)
        }
        remover = pid
        release = FileDescriptor(rawValue: releaseEnd)
        do {
            directory = try parent.openAt(made, [.readOnly, .directory])
        } catch {
            Self.finish(release: release, remover: pid)
            try? parent.close()
            throw SystemCallError(systemCall: .open, errno: error)
        }
        guard Self.isInMemory(directory) else {
            try? directory.close()
            Self.finish(release: release, remover: pid)
            try? parent.close()
            throw SystemCallError(systemCall: .stat, errno: .notSupported)
        }
    }

    deinit { remove() }

    /// Whether the file system of `descriptor` keeps its files in memory only (tmpfs or ramfs).
    static func isInMemory(_ descriptor: FileDescriptor) -> Bool {
        let temporaryFileSystem: Int64 = 0x0102_1994
        let ramFileSystem: Int64 = 0x8584_58F6
        let type = vsys_file_system_type(descriptor.rawValue)
        return type == temporaryFileSystem || type == ramFileSystem
    }

    /// Writes a new file `fileName` (mode 0400) holding `contents`.
    package func write(_ fileName: String, contents: [UInt8]) throws(SystemCallError) {
        let file: FileDescriptor
        do {
            file = try directory.openAt(fileName, [.writeOnly, .create, .exclusiveCreate], permissions: .ownerRead)
        } catch {
            throw SystemCallError(systemCall: .open, errno: error)
        }
        do {
            try file.writeAll(contents)
        } catch {
            try? file.close()
            throw SystemCallError(systemCall: .write, errno: error)
        }
        do { try file.close() } catch { throw SystemCallError(systemCall: .close, errno: error) }
    }

    /// Makes the directory read-only (0500), as systemd leaves a service's credentials.
    package func seal() throws(SystemCallError) {
        do { try directory.setPermissions(FilePermissions(rawValue: 0o500)) } catch {
            throw SystemCallError(systemCall: .chmod, errno: error)
        }
    }

    /// Removes the files and the directory now, and lets the remover end. Calling it again does nothing.
    package func remove() {
        guard let release else { return }
        // The remover does it, as it would were this process killed: one way to remove the directory.
        try? directory.close()
        try? parent.close()
        Self.finish(release: release, remover: remover)
        self.release = nil
    }

    /// Closes the remover's pipe (it then removes whatever is left) and waits for it to end.
    private static func finish(release: FileDescriptor?, remover: pid_t) {
        try? release?.close()
        var status: Int32 = 0
        while waitpid(remover, &status, 0) == -1, Errno.current == .interrupted {}
    }
}
