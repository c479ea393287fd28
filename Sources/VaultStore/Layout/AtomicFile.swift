import VaultSystem

/// Durable, atomic writes of whole files inside an open directory (items go through `ItemWrite`): the
/// bytes go to a fresh temp file in the same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600), are
/// written in full and flushed, and only then take the final name (a rename, or a link for
/// create-if-absent), followed by an fsync of the directory. On any failure before that the temp file
/// is removed and the previous file is untouched.
enum AtomicFile {
    /// Temp files start with this prefix; a leading '.' keeps them out of every listing.
    static let temporaryPrefix = ".tmp."

    static func temporaryName() -> String {
        let value = UInt64.random(in: .min ... .max)
        return temporaryPrefix + Hex.encode(stride(from: 0, to: 64, by: 8).map { UInt8((value >> UInt64($0)) & 0xff) })
    }

    /// Replaces (or creates) `name` with `contents`: temp file, fsync, rename, fsync of the directory.
    static func replace(
        _ name: String, contents: FileContents, in directory: FileDescriptor, directoryPath: FilePath,
        permissions: FilePermissions = .ownerReadWrite
    ) throws(StoreError) {
        let temporary = try writeTemporary(contents, in: directory, directoryPath: directoryPath, permissions)
        try rename(temporary, to: name, in: directory, directoryPath: directoryPath)
        try syncDirectory(directory, path: directoryPath)
    }

    /// Gives the written temp file `temporary` the name `name`; on failure the temp file goes.
    static func rename(_ temporary: String, to name: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw StoreError.system(error, .rename, "rename a temp file onto", path: directoryPath / name)
        }
    }

    /// Replaces (or creates) the symbolic link `name` with one whose text is `target`, atomically
    /// (symlink to a temp name, then rename), without syncing: the caller's directory fsync makes it
    /// durable.
    static func replaceSymbolicLink(
        _ name: String, target: String, in directory: FileDescriptor, directoryPath: FilePath
    ) throws(StoreError) {
        let temporary = temporaryName()
        do {
            try directory.makeSymbolicLinkAt(temporary, target: target)
        } catch {
            throw StoreError.system(error, .symlink, "create a temp link in", path: directoryPath)
        }
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw StoreError.system(error, .rename, "rename a temp link onto", path: directoryPath / name)
        }
    }

    /// Unlinks `name` without syncing; nothing to do when it does not exist.
    static func removeIfPresent(_ name: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        do {
            try directory.unlinkAt(name)
        } catch {
            if error != .noSuchFileOrDirectory {
                throw StoreError.system(error, .unlink, "remove", path: directoryPath / name)
            }
        }
    }

    /// Creates `name` with `contents` only if no file of that name exists; fails with a `StoreError`
    /// whose cause is `EEXIST` otherwise. The complete file appears at once, never a partial one: the
    /// temp file renamed only if the name is free (`RENAME_NOREPLACE`), or on a file system that cannot,
    /// hard-linked and then unlinked. (A link shows the file with two links for a moment, and readers
    /// refuse key files with more than one: a concurrent first write of a group read its new `group.key`
    /// so and failed.)
    static func createExclusively(
        _ name: String, contents: FileContents, in directory: FileDescriptor, directoryPath: FilePath,
        permissions: FilePermissions = .ownerReadWrite
    ) throws(StoreError) {
        let temporary = try writeTemporary(contents, in: directory, directoryPath: directoryPath, permissions)
        defer { try? directory.unlinkAt(temporary) }
        do {
            try directory.renameIfAbsentAt(temporary, to: name)
        } catch  where [.invalidArgument, .notSupported, .notImplemented, .notPermitted].contains(error) {
            // A file system that cannot, a kernel without renameat2, or a seccomp filter that refuses it:
            // the link reports what is really wrong, if anything (and there the two-link moment stays).
            do {
                try directory.linkAt(temporary, to: name)
            } catch {
                throw StoreError.system(error, .link, "create", path: directoryPath / name)
            }
        } catch {
            throw StoreError.system(error, .rename, "create", path: directoryPath / name)
        }
        try syncDirectory(directory, path: directoryPath)
    }

    /// Removes `name`; returns false when it did not exist. `alsoRemove` names a companion (the
    /// generation record) unlinked in the same directory-fsync round, after `name`; that it is missing
    /// is fine.
    static func remove(
        _ name: String, in directory: FileDescriptor, directoryPath: FilePath, alsoRemove: String? = nil
    ) throws(StoreError) -> Bool {
        do {
            try directory.unlinkAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, .unlink, "remove", path: directoryPath / name)
        }
        var pending: StoreError?
        if let alsoRemove {
            do throws(StoreError) {
                try removeIfPresent(alsoRemove, in: directory, directoryPath: directoryPath)
            } catch {
                pending = error
            }
        }
        try syncDirectory(directory, path: directoryPath)
        if let pending { throw pending }
        return true
    }

    /// Makes the directory's entries (a rename, link or unlink) durable.
    static func syncDirectory(_ directory: FileDescriptor, path: FilePath) throws(StoreError) {
        do {
            try directory.sync()
        } catch {
            throw StoreError.system(error, .fsync, "fsync the directory", path: path)
        }
    }

    /// Writes `contents` to a new temp file in `directory` (flushed unless `durable` is false) and
    /// returns its name; on any failure the temp file is gone.
    static func writeTemporary(
        _ contents: FileContents, in directory: FileDescriptor, directoryPath: FilePath,
        _ permissions: FilePermissions, durable: Bool = true
    ) throws(StoreError) -> String {
        var name = temporaryName()
        var fd: FileDescriptor
        var attempts = 0
        while true {
            do {
                fd = try directory.openAt(name, [.writeOnly, .create, .exclusiveCreate], permissions: permissions)
                break
            } catch {
                attempts += 1
                // A name collision of 64 random bits means another writer's temp file; pick again.
                if error == .fileExists, attempts < 8 {
                    name = temporaryName()
                    continue
                }
                throw StoreError.system(error, .open, "create a temp file in", path: directoryPath)
            }
        }
        // Made only for a message: every temp file of a write comes here.
        var path: FilePath { directoryPath / name }
        // Group bits are set explicitly: the umask of whoever writes must not take them away (a shared
        // group's members read each other's files).
        if permissions != .ownerReadWrite {
            do {
                try fd.setPermissions(permissions)
            } catch {
                try? fd.close()
                try? directory.unlinkAt(name)
                throw StoreError.system(error, .chmod, "set the mode of", path: path)
            }
        }
        do {
            try contents.write(to: fd)
        } catch {
            try? fd.close()
            try? directory.unlinkAt(name)
            throw StoreError.system(error, .write, "write", path: path)
        }
        do {
            if durable { try fd.sync() }
        } catch {
            try? fd.close()
            try? directory.unlinkAt(name)
            throw StoreError.system(error, .fsync, "fsync", path: path)
        }
        do {
            // close can report a delayed write error (NFS and some FUSE file systems do).
            try fd.close()
        } catch {
            try? directory.unlinkAt(name)
            throw StoreError.system(error, .close, "close", path: path)
        }
        return name
    }
}
