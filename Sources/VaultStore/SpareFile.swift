import VaultSystem

/// The spare file of a group directory: the file an item had before its last replacement, zeroed.
/// A new item file costs the file system an inode and blocks to allocate, the replaced one an inode
/// and blocks to free, and the new file's fsync a journal commit for its inode. Writing over the
/// spare in place (same size: no metadata changes, so `fdatasync` writes data only) and exchanging
/// it with the item (`RENAME_EXCHANGE`, after which the old file is the spare) avoids those; the
/// directory fsync remains the one journal commit (which still carries the generation record's new
/// link). The spare is no item's file, so a crash while it is written loses nothing.
///
/// Written in place only when the exchange that made it the spare is durable, which the write lock
/// knows (`WriterMark`: the previous writer let go normally); otherwise it is removed first
/// (`Housekeeping`).
struct SpareFile {
    static let name = ".spare"

    let file: FileDescriptor
    /// Its size when opened.
    let size: Int64

    /// The spare opened for writing, created when missing; nil when no usable spare can be had (then
    /// the caller writes a temp file as before). Anything but a regular file of this user with one link
    /// and no group or other permissions (a symlink, a FIFO, a directory, a hard link to another file, a
    /// file someone else made) is removed, never written through: after the exchange its owner and
    /// mode would be the item's.
    static func open(in directory: FileDescriptor, permissions: FilePermissions) -> SpareFile? {
        do {
            let file = try directory.openAt(name, [.writeOnly, .nonBlocking])
            if let status = try? file.status(), status.kind == .regular, status.linkCount == 1,
                status.ownerID == ProcessIdentity.effectiveUserID, status.permissions.rawValue & 0o077 == 0
            {
                return SpareFile(file: file, size: status.size)
            }
            try? file.close()
        } catch {
            if error == .noSuchFileOrDirectory { return create(in: directory, permissions: permissions) }
        }
        guard (try? directory.unlinkAt(name)) != nil else { return nil }
        return create(in: directory, permissions: permissions)
    }

    private static func create(in directory: FileDescriptor, permissions: FilePermissions) -> SpareFile? {
        let options: FileDescriptor.OpenOptions = [.writeOnly, .create, .exclusiveCreate]
        guard let file = try? directory.openAt(name, options, permissions: permissions) else { return nil }
        return SpareFile(file: file, size: 0)
    }

    /// Writes `contents` (the new file `itemName`) over the spare, cuts it to their length, flushes the
    /// data and closes it. On failure the spare is removed (it may be half written) and the item is
    /// untouched.
    func write(_ contents: [UInt8], for itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        // Messages name the file being written; the spare is where its bytes go.
        let path = FilePath((directoryPath / itemName).string + " (through " + Self.name + ")")
        func fail(_ error: Errno, _ call: SystemOperation, _ verb: String) -> StoreError {
            try? file.close()
            try? directory.unlinkAt(Self.name)
            return StoreError.system(error, call, verb, path: path)
        }
        do {
            try file.writeAll(contents, at: 0)
        } catch {
            throw fail(error, .write, "write")
        }
        if size > Int64(contents.count) {
            do {
                try file.truncate(to: Int64(contents.count))
            } catch {
                throw fail(error, .write, "truncate")
            }
        }
        do {
            try file.syncData()
        } catch {
            throw fail(error, .fsync, "fdatasync")
        }
        do {
            try file.close()
        } catch {
            try? directory.unlinkAt(Self.name)
            throw StoreError.system(error, .close, "close", path: path)
        }
    }

    /// Gives the spare's contents the name `itemName`: an exchange when `itemName` exists (its old file
    /// becomes the spare), else a rename: when it does not exist yet, or when the exchange failed and
    /// left both names as they were (a file system without it, a seccomp filter that refuses
    /// `renameat2`).
    static func exchange(with itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        do {
            try directory.exchangeAt(name, with: itemName)
            return
        } catch {
            // A failed renameat2 changed nothing; the rename below reports what is really wrong.
        }
        do {
            try directory.renameAt(name, to: itemName)
        } catch {
            try? directory.unlinkAt(name)
            throw StoreError.system(error, .rename, "rename the spare file onto", path: directoryPath / itemName)
        }
    }

    /// Overwrites the spare, which now holds the replaced file's ciphertext, with zeros of the same
    /// length: no file keeps an old version of a secret (a copy of the directory would carry it along
    /// with `master.key`), and the next write still finds blocks of the right size. Only after the
    /// directory fsync, when the spare is surely no item's file on disk; not synced (the next write
    /// overwrites it anyway). Best effort: a failure leaves ciphertext, never a wrong item.
    static func scrub(in directory: FileDescriptor) {
        guard let spare = try? directory.openAt(name, [.writeOnly, .nonBlocking]) else { return }
        defer { try? spare.close() }
        guard let status = try? spare.status(), status.kind == .regular, status.linkCount == 1, status.size > 0,
            status.size <= Int64(ItemFile.maximumFileByteCount)
        else { return }
        _ = try? spare.writeAll([UInt8](repeating: 0, count: Int(status.size)), at: 0)
    }
}
