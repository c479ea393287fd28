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

    /// Opens the vault directory after checking that it is a real directory that only its owner can
    /// write.
    static func open(_ path: String, creating: Bool) throws(StoreError) -> FileDescriptor {
        let status: FileStatus
        do {
            status = try FileDescriptor.currentWorkingDirectory.statusAt(path)
        } catch {
            if error == .noSuchFileOrDirectory {
                throw StoreError(
                    .vaultNotFound, "no vault at \(path) (the directory does not exist); create one with `vault init`",
                    path: path, cause: error)
            }
            throw StoreError.system(error, "inspect", path: path)
        }
        try checkDirectory(status, path: path, what: "vault directory")
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(path)
        } catch {
            throw StoreError.system(error, "open the vault directory", path: path)
        }
        do {
            let opened = try fd.status()
            try checkDirectory(opened, path: path, what: "vault directory")
        } catch let error as StoreError {
            try? fd.close()
            throw error
        } catch {
            try? fd.close()
            throw StoreError.system(error as! Errno, "inspect", path: path)
        }
        return fd
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

    private static func readSmallFile(
        _ name: String, in directory: FileDescriptor, path: String, limit: Int, confirming: Bool
    ) throws(StoreError) -> (contents: [UInt8], unchanged: Bool) {
        let fd: FileDescriptor
        do {
            do {
                fd = try directory.openAt(name, [.readOnly, .noAccessTime])
            } catch  where error == .notPermitted {
                // O_NOATIME needs ownership; a file of another user is read (and then refused) without it.
                fd = try directory.openAt(name, .readOnly)
            }
        } catch {
            if error == .tooManySymbolicLinks {
                throw StoreError(
                    .insecureFile, "\(path) is a symbolic link; vault refuses links inside the vault", path: path,
                    cause: error)
            }
            throw StoreError.system(error, "open", path: path)
        }
        defer { try? fd.close() }
        do {
            let status = try fd.status()
            guard status.kind == .regular else {
                throw StoreError(.insecureFile, "\(path) is not a regular file", path: path)
            }
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
