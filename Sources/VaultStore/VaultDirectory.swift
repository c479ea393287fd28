import VaultSystem

/// Opening the vault's directories and small files safely: every open is relative to an open
/// directory with `O_NOFOLLOW`, and each refusal names the path and the fix.
enum VaultDirectory {
    /// Creates the missing parents of `path` (0700) and the vault directory itself (0700); an
    /// existing directory is fine (a systemd `StateDirectory=` makes it empty).
    static func prepareForCreate(_ path: String) throws(StoreError) {
        guard !path.isEmpty else { throw StoreError(.invalidName, "the vault path is empty") }
        let absolute = path.hasPrefix("/")
        var prefix = absolute ? "/" : ""
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        var parent = absolute ? "/" : "."
        for component in components {
            prefix += (prefix.isEmpty || prefix == "/" ? "" : "/") + component
            defer { parent = prefix }
            do {
                try FileDescriptor.currentWorkingDirectory.makeDirectoryAt(prefix, permissions: .ownerAll)
            } catch {
                if error == .fileExists { continue }
                throw StoreError.system(error, "create the directory", path: prefix)
            }
            // A new directory exists durably only once its parent's entry is on disk.
            do {
                let fd = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(parent)
                defer { try? fd.close() }
                try fd.sync()
            } catch {
                throw StoreError.system(error, "fsync the directory", path: parent)
            }
        }
    }

    /// A path's directory and last component: "a/b" → ("a", "b"), "b" → (".", "b"), "/b" → ("/", "b").
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// `path` without trailing "/" and "/." components, which would make the kernel follow a symlink
    /// in the last component that `O_NOFOLLOW` and `AT_SYMLINK_NOFOLLOW` exist to refuse.
    static func withoutTrailingSeparators(_ path: String) -> String {
        var result = Substring(path)
        while result.count > 1 {
            if result.hasSuffix("/") {
                result = result.dropLast()
            } else if result.hasSuffix("/.") {
                result = result.dropLast(2)
                if result.isEmpty { result = "/" }
            } else {
                break
            }
        }
        return String(result)
    }

    /// Opens the vault directory after checking that it is a real directory (not a symlink, whatever
    /// trailing "/" or "/." it is named with) that belongs to the effective user (or root) and that
    /// only its owner can write, and that no parent lets another user replace it (`checkParents`).
    static func open(_ given: String, creating: Bool) throws(StoreError) -> FileDescriptor {
        let path = withoutTrailingSeparators(given)
        let status: FileStatus
        do {
            status = try FileDescriptor.currentWorkingDirectory.statusAt(path)
        } catch {
            if error == .noSuchFileOrDirectory {
                throw StoreError(
                    .vaultNotFound, "no vault at \(given) (the directory does not exist); create one with `vault init`",
                    path: given, cause: error)
            }
            if error == .permissionDenied, let (owner, _) = VaultLocation.owner(of: given),
                owner != ProcessIdentity.effectiveUserID
            {
                throw StoreError(
                    .permissionDenied,
                    "cannot inspect \(given): \(error); the vault belongs to uid \(owner): "
                        + VaultLocation.runAsOwnerAdvice(owner),
                    path: given, cause: error)
            }
            throw StoreError.system(error, "inspect", path: given)
        }
        try checkDirectory(status, path: given, what: "vault directory")
        try checkParents(of: path, given: given)
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(path)
        } catch {
            if error == .tooManySymbolicLinks || error == .notDirectory {
                throw StoreError(
                    .insecureFile, "vault directory \(given) was replaced by a symbolic link while it was opened",
                    path: given, cause: error)
            }
            throw StoreError.system(error, "open the vault directory", path: given)
        }
        do {
            let opened = try fd.status()
            try checkDirectory(opened, path: given, what: "vault directory")
            guard opened.inode == status.inode, opened.device == status.device else {
                throw StoreError(
                    .insecureFile, "vault directory \(given) changed while it was being opened; try again", path: given)
            }
        } catch let error as StoreError {
            try? fd.close()
            throw error
        } catch {
            try? fd.close()
            throw StoreError.system(error as! Errno, "inspect", path: given)
        }
        return fd
    }

    /// Walks the directories above the vault (symlinks resolved) as OpenSSH's StrictModes does: each
    /// must belong to root or the effective user, and must not be writable by group or others unless
    /// its sticky bit is set (as /tmp's is). Whoever can write a parent can rename the vault away and
    /// put a directory of their own in its place.
    static func checkParents(of path: String, given: String) throws(StoreError) {
        let parent = split(path).directory
        let resolved: String
        do {
            resolved = try FileDescriptor.resolvedPath(parent)
        } catch {
            throw StoreError.system(error, "resolve the parent directory of", path: given)
        }
        var current = resolved
        let euid = ProcessIdentity.effectiveUserID
        while true {
            let status: FileStatus
            do {
                status = try FileDescriptor.currentWorkingDirectory.statusAt(current)
            } catch {
                throw StoreError.system(error, "inspect", path: current)
            }
            if status.ownerID != 0 && status.ownerID != euid {
                throw StoreError(
                    .insecureFile,
                    "\(current), a parent of the vault \(given), belongs to uid \(status.ownerID), who could replace "
                        + "the vault; keep the vault under directories owned by you (uid \(euid)) or root",
                    path: current)
            }
            if !status.permissions.intersection(.groupOrOtherWrite).isEmpty && !status.isSticky {
                throw StoreError(
                    .insecureFile,
                    "\(current), a parent of the vault \(given), is writable by group or others (mode "
                        + "\(status.permissions)), who could replace the vault; run `chmod go-w \(current)`",
                    path: current)
            }
            if current == "/" { return }
            current = split(current).directory
        }
    }

    /// Opens a directory inside the vault, refusing a symlink or anything that is not a directory.
    static func openSubdirectory(_ name: String, in parent: FileDescriptor, path: String) throws(StoreError)
        -> FileDescriptor
    {
        let fd: FileDescriptor
        do {
            fd = try parent.openDirectoryAt(name)
        } catch {
            if error == .tooManySymbolicLinks || error == .notDirectory {
                throw StoreError(
                    .insecureFile,
                    "\(path) is a symbolic link or not a directory; vault refuses links inside the vault", path: path,
                    cause: error)
            }
            throw StoreError.system(error, "open", path: path)
        }
        do {
            try checkDirectory(try fd.status(), path: path, what: "directory")
        } catch let error as StoreError {
            try? fd.close()
            throw error
        } catch {
            try? fd.close()
            throw StoreError.system(error as! Errno, "inspect", path: path)
        }
        return fd
    }

    static func checkDirectory(_ status: FileStatus, path: String, what: String) throws(StoreError) {
        switch status.kind {
        case .directory: break
        case .symbolicLink:
            throw StoreError(
                .insecureFile,
                "\(what) \(path) is a symbolic link; vault refuses it (use the real directory's path)", path: path)
        default:
            throw StoreError(.insecureFile, "\(what) \(path) is not a directory", path: path)
        }
        let euid = ProcessIdentity.effectiveUserID
        guard status.ownerID == euid || status.ownerID == 0 else {
            throw StoreError(
                .insecureFile,
                "\(what) \(path) belongs to uid \(status.ownerID), not to the user running vault (uid \(euid)) or "
                    + "root; \(VaultLocation.runAsOwnerAdvice(status.ownerID))",
                path: path)
        }
        guard status.permissions.intersection(.groupOrOtherWrite).isEmpty else {
            throw StoreError(
                .insecureFile,
                "\(what) \(path) is writable by group or others (mode \(status.permissions)); run `chmod 700 \(path)`",
                path: path)
        }
    }

    /// Reads a whole small regular file in `directory`, refusing symlinks, non-regular files and
    /// files larger than `limit`. ENOENT comes back as a `StoreError` whose `errno` is ENOENT.
    static func readSmallFile(
        _ name: String, in directory: FileDescriptor, path: String, limit: Int
    ) throws(StoreError) -> [UInt8] {
        try readSmallFile(name, in: directory, path: path, limit: limit, confirming: false).contents
    }

    /// Like `readSmallFile`, and whether the bytes are those of the file at `name` when the read
    /// ended: the file did not change while it was read (inode, size, change time) and `name` still
    /// leads to it. For a reader that must tell a damaged file from one replaced under it.
    static func readSmallFileConfirmed(
        _ name: String, in directory: FileDescriptor, path: String, limit: Int
    ) throws(StoreError) -> (contents: [UInt8], unchanged: Bool) {
        try readSmallFile(name, in: directory, path: path, limit: limit, confirming: true)
    }

    /// The first `prefix` bytes of a regular file in `directory` whose size is `minimumSize` to
    /// `limit` bytes: what a reader checks (magic, header) before it reads a large file whole.
    static func readSmallFilePrefix(
        _ name: String, in directory: FileDescriptor, path: String, prefix: Int, minimumSize: Int, limit: Int
    ) throws(StoreError) -> [UInt8] {
        let (fd, status) = try openRegularFile(name, in: directory, path: path)
        defer { try? fd.close() }
        do {
            guard status.size >= Int64(minimumSize), status.size <= Int64(limit) else {
                throw StoreError(
                    .integrity,
                    "\(path) is \(status.size) bytes, not between \(minimumSize) and \(limit): it is not what vault "
                        + "expects there, or it is damaged",
                    path: path)
            }
            var bytes = [UInt8](repeating: 0, count: prefix)
            let n = try bytes.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try fd.read(into: buffer, at: 0) }
            }.get()
            return Array(bytes[0..<n])
        } catch let error as StoreError {
            throw error
        } catch let error as Errno {
            throw StoreError.system(error, "read", path: path)
        } catch {
            throw StoreError(.io, "cannot read \(path): \(error)", path: path)
        }
    }

    /// Opens `name` in `directory` for reading without following a link or blocking on a FIFO, and
    /// checks that it is a regular file; each refusal names the path and what is there instead.
    private static func openRegularFile(_ name: String, in directory: FileDescriptor, path: String)
        throws(StoreError) -> (fd: FileDescriptor, status: FileStatus)
    {
        let fd: FileDescriptor
        do {
            // O_NONBLOCK: a FIFO or device planted under the name must not hang the reader.
            do {
                fd = try directory.openAt(name, [.readOnly, .noAccessTime, .nonBlocking])
            } catch  where error == .notPermitted {
                // O_NOATIME needs ownership; a file of another user is read (and then refused) without it.
                fd = try directory.openAt(name, [.readOnly, .nonBlocking])
            }
        } catch {
            if error == .tooManySymbolicLinks {
                throw StoreError(
                    .insecureFile, "\(path) is a symbolic link; vault refuses links inside the vault", path: path,
                    cause: error)
            }
            if error == .noSuchDeviceOrAddress {
                // What opening a socket (or a device without a driver) gives.
                throw StoreError(
                    .insecureFile, "\(path) is not a regular file (a socket or device); vault refuses it", path: path,
                    cause: error)
            }
            throw StoreError.system(error, "open", path: path)
        }
        let status: FileStatus
        do {
            status = try fd.status()
        } catch {
            try? fd.close()
            throw StoreError.system(error, "inspect", path: path)
        }
        guard status.kind == .regular else {
            try? fd.close()
            throw StoreError(
                .insecureFile, "\(path) is \(status.kindDescription), not a regular file; vault refuses it", path: path)
        }
        return (fd, status)
    }

    private static func readSmallFile(
        _ name: String, in directory: FileDescriptor, path: String, limit: Int, confirming: Bool
    ) throws(StoreError) -> (contents: [UInt8], unchanged: Bool) {
        let (fd, status) = try openRegularFile(name, in: directory, path: path)
        defer { try? fd.close() }
        do {
            guard status.size <= Int64(limit) else {
                throw StoreError(
                    .integrity, "\(path) is \(status.size) bytes, more than the \(limit) allowed; it is damaged",
                    path: path)
            }
            let contents = try fd.readAll(sizeHint: Int(status.size), limit: limit)
            guard confirming else { return (contents, false) }
            let after = try fd.status()
            let atName = try? directory.statusAt(name)
            let unchanged =
                after.size == status.size && after.changeNanoseconds == status.changeNanoseconds
                && atName?.inode == status.inode && atName?.device == status.device
            return (contents, unchanged)
        } catch let error as StoreError {
            throw error
        } catch let error as Errno {
            if error == .fileTooLarge {
                throw StoreError(.integrity, "\(path) grew past \(limit) bytes while being read", path: path)
            }
            throw StoreError.system(error, "read", path: path)
        } catch {
            throw StoreError(.io, "cannot read \(path): \(error)", path: path)
        }
    }

    /// Removes `name` in `parent` and everything below it (files, links, directories), never following
    /// a link; nothing to do when it does not exist.
    static func removeTree(_ name: String, in parent: FileDescriptor, path: String) throws(StoreError) {
        let status: FileStatus
        do {
            status = try parent.statusAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError.system(error, "inspect", path: path + "/" + name)
        }
        guard status.kind == .directory else {
            do {
                try parent.unlinkAt(name)
            } catch {
                throw StoreError.system(error, "remove", path: path + "/" + name)
            }
            return
        }
        let child = try openSubdirectory(name, in: parent, path: path + "/" + name)
        do {
            let names = try child.entryNames()
            for entry in names { try removeTree(entry, in: child, path: path + "/" + name) }
        } catch let error as StoreError {
            try? child.close()
            throw error
        } catch {
            try? child.close()
            throw StoreError.system(error as! Errno, "list", path: path + "/" + name)
        }
        try? child.close()
        do {
            try parent.removeDirectoryAt(name)
        } catch {
            throw StoreError.system(error, "remove", path: path + "/" + name)
        }
    }
}
