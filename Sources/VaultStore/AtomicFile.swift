import VaultSystem

/// Durable, atomic file writes inside an open directory: the bytes go to a fresh temp file in the
/// same directory (`O_CREAT|O_EXCL|O_NOFOLLOW`, 0600), are written in full and fsynced, and only then
/// take the final name (rename, or link for create-if-absent), followed by an fsync of the directory.
/// On any failure the temp file is removed and the previous file is untouched.
enum AtomicFile {
    /// Temp files start with this prefix; a leading '.' keeps them out of every listing.
    static let temporaryPrefix = ".tmp."

    static func temporaryName() -> String {
        let value = UInt64.random(in: .min ... .max)
        return temporaryPrefix + Hex.encode(withUnsafeBytes(of: value) { Array($0) })
    }

    /// Replaces (or creates) `name` with `contents`.
    static func replace(
        _ name: String,
        contents: UnsafeRawBufferPointer,
        in directory: FileDescriptor,
        directoryPath: String,
        permissions: FilePermissions = .ownerReadWrite,
        durable: Bool = true,
        generationRecord: (name: String, text: String)? = nil
    ) throws(StoreError) {
        let temporary = try writeTemporary(
            contents, in: directory, directoryPath: directoryPath, permissions, durable: durable)
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw StoreError.system(error, "rename a temp file onto", path: directoryPath + "/" + name)
        }
        // The generation record is metadata only and shares the one directory fsync; the file is in
        // place, so the directory is synced even when the record fails, and then that failure is
        // reported.
        var pending: StoreError?
        if let generationRecord {
            do {
                try replaceSymbolicLink(
                    generationRecord.name, target: generationRecord.text, in: directory, directoryPath: directoryPath)
            } catch {
                pending = error
            }
        }
        if durable { try syncDirectory(directory, path: directoryPath) }
        if let pending { throw pending }
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
