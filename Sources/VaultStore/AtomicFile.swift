import VaultSystem

/// Durable, atomic file writes inside an open directory: the bytes go to a fresh temp file in the
/// same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600), or for item files into the directory's spare
/// file (`spareName`), are written in full and flushed, and only then take the final name (rename,
/// exchange, or link for create-if-absent), followed by an fsync of the directory. On any failure
/// before that the temp file or spare is removed and the previous file is untouched.
enum AtomicFile {
    /// Temp files start with this prefix; a leading '.' keeps them out of every listing.
    static let temporaryPrefix = ".tmp."

    static func temporaryName() -> String {
        let value = UInt64.random(in: .min ... .max)
        return temporaryPrefix + Hex.encode(withUnsafeBytes(of: value) { Array($0) })
    }

    /// Replaces (or creates) `name` with `contents`. With `reusingSpare` (item files, durable writes),
    /// the bytes go into the directory's spare file instead of a new temp file (see `spareName`).
    /// `generationRecord` is replaced after the file, or removed when its text is nil.
    static func replace(
        _ name: String,
        contents: UnsafeRawBufferPointer,
        in directory: FileDescriptor,
        directoryPath: String,
        permissions: FilePermissions = .ownerReadWrite,
        durable: Bool = true,
        generationRecord: (name: String, text: String?)? = nil,
        reusingSpare: Bool = false
    ) throws(StoreError) {
        if durable, reusingSpare, let spare = openSpare(in: directory, permissions: permissions) {
            try writeSpare(spare, contents: contents, for: name, in: directory, directoryPath: directoryPath)
            try exchangeSpare(with: name, in: directory, directoryPath: directoryPath)
            do {
                try finishReplace(
                    in: directory, directoryPath: directoryPath, durable: true, generationRecord: generationRecord)
            } catch {
                // The exchange may not be durable: the spare may still be the item's file on disk, so it
                // must not be written in place. Removing it is safe either way (journal order).
                try? directory.unlinkAt(spareName)
                throw error
            }
            scrubSpare(in: directory)
            return
        }
        let temporary = try writeTemporary(
            contents, in: directory, directoryPath: directoryPath, permissions, durable: durable)
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw StoreError.system(error, "rename a temp file onto", path: directoryPath + "/" + name)
        }
        try finishReplace(
            in: directory, directoryPath: directoryPath, durable: durable, generationRecord: generationRecord)
    }

    /// After the new file took its name: the generation record, then the one directory fsync.
    private static func finishReplace(
        in directory: FileDescriptor, directoryPath: String, durable: Bool,
        generationRecord: (name: String, text: String?)?
    ) throws(StoreError) {
        // The generation record is metadata only and shares the one directory fsync; the file is in
        // place, so the directory is synced even when the record fails, and then that failure is
        // reported.
        var pending: StoreError?
        if let (recordName, text) = generationRecord {
            do throws(StoreError) {
                if let text {
                    try replaceSymbolicLink(recordName, target: text, in: directory, directoryPath: directoryPath)
                } else {
                    try removeIfPresent(recordName, in: directory, directoryPath: directoryPath)
                }
            } catch {
                pending = error
            }
        }
        if durable { try syncDirectory(directory, path: directoryPath) }
        if let pending { throw pending }
    }

    // MARK: The spare file

    /// The spare file of a group directory: the file an item had before its last replacement, zeroed.
    /// A new item file costs the file system an inode and blocks to allocate, the replaced one an inode
    /// and blocks to free, and the new file's fsync a journal commit for its inode. Writing over the
    /// spare in place (same size: no metadata changes, so `fdatasync` writes data only) and exchanging
    /// it with the item (`RENAME_EXCHANGE`, after which the old file is the spare) avoids those; the
    /// directory fsync remains the one journal commit (which still carries the generation record's
    /// new link). The spare is no item's file, so a crash while it is written loses nothing.
    ///
    /// Written in place only when the exchange that made it the spare is durable, which the write lock
    /// knows (`WriterMark`: the previous writer let go normally); otherwise it is removed first.
    static let spareName = ".spare"

    /// The spare opened for writing with its size, created when missing; nil when no usable spare can
    /// be had (then the caller writes a temp file as before). Anything but a regular file of this user
    /// with one link and no group or other permissions (a symlink, a FIFO, a directory, a hard link to
    /// another file, a file someone else made) is removed, never written through: after the exchange
    /// its owner and mode would be the item's.
    private static func openSpare(
        in directory: FileDescriptor, permissions: FilePermissions
    ) -> (file: FileDescriptor, size: Int64)? {
        do {
            let file = try directory.openAt(spareName, [.writeOnly, .nonBlocking])
            if let status = try? file.status(), status.kind == .regular, status.linkCount == 1,
                status.ownerID == ProcessIdentity.effectiveUserID, status.permissions.rawValue & 0o077 == 0
            {
                return (file, status.size)
            }
            try? file.close()
        } catch {
            if error == .noSuchFileOrDirectory { return createSpare(in: directory, permissions: permissions) }
        }
        guard (try? directory.unlinkAt(spareName)) != nil else { return nil }
        return createSpare(in: directory, permissions: permissions)
    }

    private static func createSpare(
        in directory: FileDescriptor, permissions: FilePermissions
    ) -> (file: FileDescriptor, size: Int64)? {
        let options: FileDescriptor.OpenOptions = [.writeOnly, .create, .exclusiveCreate]
        guard let file = try? directory.openAt(spareName, options, permissions: permissions) else { return nil }
        return (file, 0)
    }

    /// Writes `contents` (the new file `name`) over the spare, cuts it to their length, and flushes the
    /// data. On failure the spare is removed (it may be half written) and `name` is untouched.
    private static func writeSpare(
        _ spare: (file: FileDescriptor, size: Int64), contents: UnsafeRawBufferPointer, for name: String,
        in directory: FileDescriptor, directoryPath: String
    ) throws(StoreError) {
        // Messages name the file being written; the spare is where its bytes go.
        let path = directoryPath + "/" + name + " (through " + spareName + ")"
        func fail(_ error: Errno, _ verb: String) -> StoreError {
            try? spare.file.close()
            try? directory.unlinkAt(spareName)
            return StoreError.system(error, verb, path: path)
        }
        do {
            try spare.file.writeAll(contents, at: 0)
        } catch {
            throw fail(error, "write")
        }
        if spare.size > Int64(contents.count) {
            do {
                try spare.file.truncate(to: Int64(contents.count))
            } catch {
                throw fail(error, "truncate")
            }
        }
        do {
            try spare.file.syncData()
        } catch {
            throw fail(error, "fdatasync")
        }
        do {
            try spare.file.close()
        } catch {
            try? directory.unlinkAt(spareName)
            throw StoreError.system(error, "close", path: path)
        }
    }

    /// Overwrites the spare, which now holds the replaced file's ciphertext, with zeros of the same
    /// length: no file keeps an old version of a secret (a copy of the directory would carry it along
    /// with `master.key`), and the next write still finds blocks of the right size. Only after the
    /// directory fsync, when the spare is surely no item's file on disk; not synced (the next write
    /// overwrites it anyway). Best effort: a failure leaves ciphertext, never a wrong item.
    private static func scrubSpare(in directory: FileDescriptor) {
        guard let spare = try? directory.openAt(spareName, [.writeOnly, .nonBlocking]) else { return }
        defer { try? spare.close() }
        guard let status = try? spare.status(), status.kind == .regular, status.linkCount == 1, status.size > 0,
            status.size <= Int64(ItemFile.maximumFileByteCount)
        else { return }
        let zeros = [UInt8](repeating: 0, count: Int(status.size))
        _ = try? zeros.withUnsafeBytes { try spare.writeAll($0, at: 0) }
    }

    /// Gives the spare's contents the name `name`: an exchange when `name` exists (its old file becomes
    /// the spare), else a rename: when `name` does not exist yet, or when the exchange failed and left
    /// both names as they were (a file system without it, a seccomp filter that refuses `renameat2`).
    private static func exchangeSpare(
        with name: String, in directory: FileDescriptor, directoryPath: String
    ) throws(StoreError) {
        do {
            try directory.exchangeAt(spareName, with: name)
            return
        } catch {
            // A failed renameat2 changed nothing; the rename below reports what is really wrong.
        }
        do {
            try directory.renameAt(spareName, to: name)
        } catch {
            try? directory.unlinkAt(spareName)
            throw StoreError.system(error, "rename the spare file onto", path: directoryPath + "/" + name)
        }
    }

    /// Replaces (or creates) the symbolic link `name` with one whose text is `target`, atomically
    /// (symlink to a temp name, then rename), without syncing: the caller's directory fsync makes it
    /// durable.
    static func replaceSymbolicLink(
        _ name: String, target: String, in directory: FileDescriptor, directoryPath: String
    ) throws(StoreError) {
        let temporary = temporaryName()
        do {
            try directory.makeSymbolicLinkAt(temporary, target: target)
        } catch {
            throw StoreError.system(error, "create a temp link in", path: directoryPath)
        }
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw StoreError.system(error, "rename a temp link onto", path: directoryPath + "/" + name)
        }
    }

    /// Unlinks `name` without syncing; nothing to do when it does not exist.
    private static func removeIfPresent(
        _ name: String, in directory: FileDescriptor, directoryPath: String
    ) throws(StoreError) {
        do {
            try directory.unlinkAt(name)
        } catch {
            if error != .noSuchFileOrDirectory {
                throw StoreError.system(error, "remove", path: directoryPath + "/" + name)
            }
        }
    }

    /// Creates `name` with `contents` only if no file of that name exists; fails with a `StoreError`
    /// whose cause is `EEXIST` otherwise. The complete file appears at once (a hard link of the temp
    /// file), never a partial one.
    static func createExclusively(
        _ name: String,
        contents: UnsafeRawBufferPointer,
        in directory: FileDescriptor,
        directoryPath: String,
        permissions: FilePermissions = .ownerReadWrite
    ) throws(StoreError) {
        let temporary = try writeTemporary(contents, in: directory, directoryPath: directoryPath, permissions)
        defer { try? directory.unlinkAt(temporary) }
        do {
            try directory.linkAt(temporary, to: name)
        } catch {
            throw StoreError.system(error, "create", path: directoryPath + "/" + name)
        }
        try syncDirectory(directory, path: directoryPath)
    }

    /// Removes `name`; returns false when it did not exist.
    /// `alsoRemove` names a companion (the generation record) unlinked in the same directory-fsync
    /// round, after `name`; that it is missing is fine.
    static func remove(
        _ name: String, in directory: FileDescriptor, directoryPath: String, alsoRemove: String? = nil
    ) throws(StoreError) -> Bool {
        do {
            try directory.unlinkAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, "remove", path: directoryPath + "/" + name)
        }
        var pending: StoreError?
        if let alsoRemove {
            do {
                try directory.unlinkAt(alsoRemove)
            } catch {
                if error != .noSuchFileOrDirectory {
                    pending = StoreError.system(error, "remove", path: directoryPath + "/" + alsoRemove)
                }
            }
        }
        try syncDirectory(directory, path: directoryPath)
        if let pending { throw pending }
        return true
    }

    /// Makes the directory's entries (a rename, link or unlink) durable.
    static func syncDirectory(_ directory: FileDescriptor, path: String) throws(StoreError) {
        do {
            try directory.sync()
        } catch {
            throw StoreError.system(error, "fsync the directory", path: path)
        }
    }

    private static func writeTemporary(
        _ contents: UnsafeRawBufferPointer,
        in directory: FileDescriptor,
        directoryPath: String,
        _ permissions: FilePermissions,
        durable: Bool = true
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
                throw StoreError.system(error, "create a temp file in", path: directoryPath)
            }
        }
        let path = directoryPath + "/" + name
        do {
            try fd.writeAll(contents)
        } catch {
            try? fd.close()
            try? directory.unlinkAt(name)
            throw StoreError.system(error, "write", path: path)
        }
        do {
            if durable { try fd.sync() }
        } catch {
            try? fd.close()
            try? directory.unlinkAt(name)
            throw StoreError.system(error, "fsync", path: path)
        }
        do {
            // close can report a delayed write error (NFS and some FUSE file systems do).
            try fd.close()
        } catch {
            try? directory.unlinkAt(name)
            throw StoreError.system(error, "close", path: path)
        }
        return name
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body that throws `StoreError`, keeping the error's type.
    func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws(StoreError) -> R) throws(StoreError) -> R {
        let result: Result<R, StoreError> = withUnsafeBytes { bytes in
            Result { () throws(StoreError) in try body(bytes) }
        }
        return try result.get()
    }
}
