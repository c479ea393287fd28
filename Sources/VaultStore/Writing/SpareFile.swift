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
///
/// A private group has one spare, `.spare`. A shared group has one per writing user,
/// `.spare.<uid>`, and a writer uses only its own: one that is the writer's own file, 0660, of the
/// directory's Unix group, with one link. Any file passing that check is one that every member could
/// already write, so writing through it lets no member steer a writer (root included) to a file
/// outside the group; a member holding it open could change the item it becomes, which members can do
/// to any item of the group anyway. After an exchange with another member's item, the spare is that
/// member's file and is removed instead of zeroed.
struct SpareFile {
    /// The spare of a private group.
    static let name = ".spare"
    /// What a shared group's spares start with; the uid of their writer follows.
    static let sharedPrefix = ".spare."

    /// This process's spare in a group directory.
    static func name(shared: Bool) -> String {
        shared ? sharedPrefix + String(ProcessIdentity.effectiveUserID) : name
    }

    /// Whether `name` is one of a shared group's spares (any writer's).
    static func isSharedSpare(_ name: String) -> Bool {
        name.hasPrefix(sharedPrefix) && UInt32(name.dropFirst(sharedPrefix.count)) != nil
    }

    let file: FileDescriptor
    /// Its size when opened.
    let size: Int64
    /// Its name in the group directory.
    let name: String

    /// The spare opened for writing, created when missing; nil when no usable spare can be had (then
    /// the caller writes a temp file as before). Anything else under its name (a symlink, a FIFO, a
    /// directory, a hard link to another file, a file someone else made, one with other permissions)
    /// is removed, never written through: after the exchange its owner and mode would be the item's.
    static func open(in directory: FileDescriptor, shared: Bool) -> SpareFile? {
        open(name(shared: shared), in: directory, shared: shared)
    }

    /// The spare `name` opened for writing (a group-commit slot's, `GroupCommit`), checked and made
    /// as `open(in:shared:)` does.
    static func open(_ name: String, in directory: FileDescriptor, shared: Bool) -> SpareFile? {
        do {
            let file = try directory.openAt(name, [.writeOnly, .nonBlocking])
            if let status = try? file.status(), isUsable(status, in: directory, shared: shared) {
                return SpareFile(file: file, size: status.size, name: name)
            }
            try? file.close()
        } catch {
            if error == .noSuchFileOrDirectory { return create(name, in: directory, shared: shared) }
        }
        guard (try? directory.unlinkAt(name)) != nil else { return nil }
        return create(name, in: directory, shared: shared)
    }

    /// Whether the file whose status is `status` may be written in place as this process's spare: a
    /// regular file of this user with one link and, in a private group, no group or other permissions;
    /// in a shared group exactly 0660 and of the directory's Unix group (what an item there must be).
    private static func isUsable(_ status: FileStatus, in directory: FileDescriptor, shared: Bool) -> Bool {
        guard status.kind == .regular, status.linkCount == 1, status.ownerID == ProcessIdentity.effectiveUserID
        else { return false }
        guard shared else { return status.permissions.rawValue & 0o077 == 0 }
        guard status.permissions == .ownerAndGroupReadWrite, let group = try? directory.status().groupID else {
            return false
        }
        return status.groupID == group
    }

    private static func create(_ name: String, in directory: FileDescriptor, shared: Bool) -> SpareFile? {
        let options: FileDescriptor.OpenOptions = [.writeOnly, .create, .exclusiveCreate]
        let permissions: FilePermissions = shared ? .ownerAndGroupReadWrite : .ownerReadWrite
        guard let file = try? directory.openAt(name, options, permissions: permissions) else { return nil }
        // Group bits set explicitly, whatever the umask: the spare becomes an item other members read.
        if shared, (try? file.setPermissions(permissions)) == nil {
            try? file.close()
            try? directory.unlinkAt(name)
            return nil
        }
        return SpareFile(file: file, size: 0, name: name)
    }

    /// Writes `contents` (the new file `itemName`) over the spare, cuts it to their length, flushes the
    /// data and closes it. On failure the spare is removed (it may be half written) and the item is
    /// untouched.
    func write(_ contents: [UInt8], for itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        // Messages name the file being written; the spare is where its bytes go. Made only for a
        // message: every write comes here.
        func path() -> FilePath { FilePath((directoryPath / itemName).string + " (through " + name + ")") }
        func fail(_ error: Errno, _ call: SystemOperation, _ verb: String) -> StoreError {
            try? file.close()
            try? directory.unlinkAt(name)
            return StoreError.system(error, call, verb, path: path())
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
            try? directory.unlinkAt(name)
            throw StoreError.system(error, .close, "close", path: path())
        }
    }

    /// Gives the spare's contents the name `itemName`: an exchange when `itemName` exists (its old file
    /// becomes the spare), else a rename: when it does not exist yet, or when the exchange failed and
    /// left both names as they were (a file system without it, a seccomp filter that refuses
    /// `renameat2`).
    func exchange(with itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
        throws(StoreError)
    {
        try Self.exchange(name, with: itemName, in: directory, directoryPath: directoryPath)
    }

    /// `exchange` of the spare named `name`.
    static func exchange(_ name: String, with itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
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
    /// overwrites it anyway). Best effort: a failure leaves ciphertext, never a wrong item. In a shared
    /// group the replaced file may be another member's, which is no spare of this writer's: it is
    /// removed (unlinked by name in the group's directory, never followed) rather than written.
    func scrub(in directory: FileDescriptor, shared: Bool) {
        Self.scrub(name, in: directory, shared: shared)
    }

    /// `scrub` of the spare named `name`.
    static func scrub(_ name: String, in directory: FileDescriptor, shared: Bool) {
        guard let spare = try? directory.openAt(name, [.writeOnly, .nonBlocking]) else { return }
        defer { try? spare.close() }
        guard let status = try? spare.status(), status.size <= Int64(ItemFile.maximumFileByteCount) else { return }
        let ours =
            shared
            ? isUsable(status, in: directory, shared: true) : status.kind == .regular && status.linkCount == 1
        guard ours else {
            if shared { try? directory.unlinkAt(name) }
            return
        }
        guard status.size > 0 else { return }
        _ = try? spare.writeAll([UInt8](repeating: 0, count: Int(status.size)), at: 0)
    }
}
