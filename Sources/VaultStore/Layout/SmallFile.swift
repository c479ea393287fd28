import Synchronization
import VaultSystem

/// Set once an `O_NOATIME` open was refused (`SmallFile.openRegular`).
private let noAccessTimeRefused = Atomic<Bool>(false)

/// Reading a whole small file of the vault (an item, the marker, a note, the journal, a backup):
/// opened without following a link or blocking on a FIFO (`O_NOFOLLOW|O_NONBLOCK`), checked to be a
/// regular file of a plausible size, and read with one allocation. ENOENT comes back as a
/// `StoreError` whose `errno` is ENOENT.
enum SmallFile {
    /// The bytes of `name` in `directory`, at most `limit` of them.
    static func read(
        _ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath, limit: Int
    ) throws(StoreError)
        -> [UInt8]
    {
        try read(name, in: directory, path: makePath(), limit: limit, confirming: false).contents
    }

    /// Like `read`, and whether the bytes are those of the file at `name` when the read ended: the file
    /// did not change while it was read (inode, size, change time) and `name` still leads to it. For a
    /// reader that must tell a damaged file from one replaced under it.
    static func readConfirmed(
        _ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath, limit: Int
    )
        throws(StoreError) -> (contents: [UInt8], unchanged: Bool)
    {
        try read(name, in: directory, path: makePath(), limit: limit, confirming: true)
    }

    /// The bytes of `name` in `directory`, or nil when there is no such file.
    static func readIfPresent(
        _ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath, limit: Int
    )
        throws(StoreError) -> [UInt8]?
    {
        do {
            return try read(name, in: directory, path: makePath(), limit: limit)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// The first `prefix` bytes of a regular file in `directory` whose size is `minimumSize` to `limit`
    /// bytes: what a reader checks (magic, header) before it reads a large file whole. `what` names
    /// the kind of file expected ("a vault backup"), for the refusal of one of another size.
    static func readPrefix(
        _ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath, prefix: Int,
        minimumSize: Int, limit: Int, what: String
    ) throws(StoreError) -> [UInt8] {
        let (fd, status) = try openRegular(name, in: directory, path: makePath())
        defer { try? fd.close() }
        guard status.size >= Int64(minimumSize), status.size <= Int64(limit) else {
            throw StoreError(
                .integrity,
                "\(makePath()) is not \(what): it is \(status.size) bytes, and \(what) is \(minimumSize) to \(limit) "
                    + "bytes (or it is damaged)",
                path: makePath().string)
        }
        do {
            return try fd.read(count: prefix, at: 0)
        } catch {
            throw StoreError.system(error, .read, "read", path: makePath())
        }
    }

    /// Opens `name` in `directory` for reading without following a link or blocking on a FIFO, and
    /// checks that it is a regular file; each refusal names the path and what is there instead.
    static func openRegular(_ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath)
        throws(StoreError) -> (fd: FileDescriptor, status: FileStatus)
    {
        let fd: FileDescriptor
        do {
            // O_NONBLOCK: a FIFO or device planted under the name must not hang the reader.
            if noAccessTimeRefused.load(ordering: .relaxed) {
                fd = try directory.openAt(name, [.readOnly, .nonBlocking])
            } else {
                do {
                    fd = try directory.openAt(name, [.readOnly, .noAccessTime, .nonBlocking])
                } catch  where error == .notPermitted {
                    // O_NOATIME needs ownership; a file of another user is read without it. Such files are
                    // the rule for this process once it meets one (a member reading a shared group, whose
                    // items are every member's): it stops asking, rather than open every file twice.
                    noAccessTimeRefused.store(true, ordering: .relaxed)
                    fd = try directory.openAt(name, [.readOnly, .nonBlocking])
                }
            }
        } catch {
            switch error {
            case .tooManySymbolicLinks:
                let message = "\(makePath()) is a symbolic link; vault refuses links inside the vault"
                throw StoreError(.insecureFile, message, path: makePath(), failed: .open, error)
            case .noSuchDeviceOrAddress:
                // What opening a socket (or a device without a driver) gives.
                let message = "\(makePath()) is not a regular file (a socket or device); vault refuses it"
                throw StoreError(.insecureFile, message, path: makePath(), failed: .open, error)
            default:
                throw StoreError.system(error, .open, "open", path: makePath())
            }
        }
        return (fd, try status(ofRegular: fd, path: makePath(), inspecting: "inspect"))
    }

    /// The status of the open `fd`, which must be a regular file; otherwise `fd` is closed and the
    /// refusal names `path` and what is there. `verb` names a failed `fstat`.
    static func status(
        ofRegular fd: FileDescriptor, path makePath: @autoclosure () -> FilePath, inspecting verb: String
    ) throws(StoreError)
        -> FileStatus
    {
        let status: FileStatus
        do {
            status = try fd.status()
        } catch {
            try? fd.close()
            throw StoreError.system(error, .stat, verb, path: makePath())
        }
        guard status.kind == .regular else {
            try? fd.close()
            throw StoreError(
                .insecureFile, "\(makePath()) is \(status.kindDescription), not a regular file; vault refuses it",
                path: makePath().string)
        }
        return status
    }

    /// The bytes of the open regular file `fd` (whose status is `status`), at most `limit` of them:
    /// for a file that was checked through this very descriptor (a file read by name again could be
    /// another one by then).
    static func read(_ fd: FileDescriptor, status: FileStatus, path makePath: @autoclosure () -> FilePath, limit: Int)
        throws(StoreError)
        -> [UInt8]
    {
        guard status.size <= Int64(limit) else {
            throw StoreError(
                .integrity, "\(makePath()) is \(status.size) bytes, more than the \(limit) allowed; it is damaged",
                path: makePath().string)
        }
        do {
            return try fd.readAll(sizeHint: Int(status.size), limit: limit)
        } catch {
            if error == .fileTooLarge {
                // readAll reports its limit as EFBIG: the cause keeps it, as it keeps a failed read's.
                throw StoreError(
                    .integrity, "\(makePath()) grew past \(limit) bytes while being read", path: makePath(),
                    failed: .read, error)
            }
            throw StoreError.system(error, .read, "read", path: makePath())
        }
    }

    private static func read(
        _ name: String, in directory: FileDescriptor, path makePath: @autoclosure () -> FilePath, limit: Int,
        confirming: Bool
    ) throws(StoreError) -> (contents: [UInt8], unchanged: Bool) {
        let (fd, status) = try openRegular(name, in: directory, path: makePath())
        defer { try? fd.close() }
        let contents = try read(fd, status: status, path: makePath(), limit: limit)
        guard confirming else { return (contents, false) }
        let after: FileStatus
        do {
            after = try fd.status()
        } catch {
            throw StoreError.system(error, .stat, "read", path: makePath())
        }
        let atName = try? directory.statusAt(name)
        let unchanged =
            after.size == status.size && after.changeNanoseconds == status.changeNanoseconds
            && atName?.inode == status.inode && atName?.device == status.device
        return (contents, unchanged)
    }
}
