internal import CVaultSystem
internal import Glibc

/// An open file descriptor. It is a plain value: whoever opens it closes it (`close()` or
/// `closeAfter(_:)`).
@usableFromInline package struct FileDescriptor: Hashable, Sendable {
    /// The raw descriptor number.
    package let rawValue: Int32

    /// Wraps a raw descriptor that the caller owns.
    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// Standard input.
    package static let standardInput = FileDescriptor(rawValue: 0)
    /// Standard output.
    package static let standardOutput = FileDescriptor(rawValue: 1)
    /// Standard error.
    package static let standardError = FileDescriptor(rawValue: 2)

    /// The current working directory, as a base for `*at` calls.
    package static let currentWorkingDirectory = FileDescriptor(rawValue: AT_FDCWD)

    /// How a file is opened. `O_CLOEXEC` and `O_NOFOLLOW` are always added.
    @usableFromInline package struct OpenOptions: OptionSet, Sendable {
        /// The raw `open(2)` flags.
        @usableFromInline package let rawValue: Int32
        /// Wraps raw `open(2)` flags.
        @inlinable package init(rawValue: Int32) { self.rawValue = rawValue }

        /// O_RDONLY.
        package static let readOnly = OpenOptions([])
        /// O_WRONLY.
        package static let writeOnly = OpenOptions(rawValue: O_WRONLY)
        /// O_RDWR.
        package static let readWrite = OpenOptions(rawValue: O_RDWR)
        /// O_CREAT.
        package static let create = OpenOptions(rawValue: O_CREAT)
        /// O_EXCL: with `create`, fail if the name exists (even as a dangling symlink).
        package static let exclusiveCreate = OpenOptions(rawValue: O_EXCL)
        /// O_TRUNC.
        package static let truncate = OpenOptions(rawValue: O_TRUNC)
        /// O_APPEND.
        package static let append = OpenOptions(rawValue: O_APPEND)
        /// O_NONBLOCK: opening a FIFO or device does not wait (a FIFO without a reader is `ENXIO`);
        /// no effect on regular files.
        package static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
        /// O_DIRECTORY: fail unless the path is a directory.
        package static let directory = OpenOptions(rawValue: O_DIRECTORY)
        /// `O_PATH`: a descriptor for lookups relative to it, without read access.
        package static let searchOnly = OpenOptions(rawValue: vsys_o_path())
        /// O_NOATIME: reading does not update the access time, so a read dirties no inode (and adds
        /// nothing to the next fsync). Allowed only to the file's owner (EPERM otherwise).
        package static let noAccessTime = OpenOptions(rawValue: vsys_o_noatime())
    }

    /// Opens `path` relative to this directory descriptor, never following a symlink in the last
    /// component and never leaking the descriptor into a child process.
    package func openAt(
        _ path: String,
        _ options: OpenOptions,
        permissions: FilePermissions = .ownerReadWrite
    ) throws(Errno) -> FileDescriptor {
        let flags = options.rawValue | O_CLOEXEC | O_NOFOLLOW
        let fd = try retryingOnInterrupt(.open) {
            path.withCString { Glibc.openat(rawValue, $0, flags, permissions.rawValue) }
        }
        return try Self.aboveStandardStreams(fd)
    }

    /// `fd`, or when it took the number of a standard stream (0, 1 or 2, closed when the process
    /// started, as a service manager or cron may leave them) a copy numbered 3 or above: otherwise the
    /// program's next write to standard output would land in a vault file.
    static func aboveStandardStreams(_ fd: Int32) throws(Errno) -> FileDescriptor {
        guard fd <= 2 else { return FileDescriptor(rawValue: fd) }
        let moved = vsys_duplicate_above(fd, 3)
        let error = Errno.current
        _ = Glibc.close(fd)
        guard moved >= 0 else { throw error }
        return FileDescriptor(rawValue: moved)
    }

    /// Opens a directory relative to this one (`O_DIRECTORY|O_NOFOLLOW`): a symlink is refused with
    /// `ELOOP` or `ENOTDIR`.
    ///
    /// A directory this process may search but not read (mode `--x` for it, as a shared vault's
    /// directories are for members) is opened `O_PATH`: the descriptor serves `*at` calls and `fstat`,
    /// not listings or `fsync` (those fail with `EBADF`).
    package func openDirectoryAt(_ path: String) throws(Errno) -> FileDescriptor {
        do {
            return try openAt(path, [.readOnly, .directory])
        } catch  where error == .permissionDenied {
            return try openAt(path, [.searchOnly, .directory])
        }
    }

    /// Opens `path` relative to this directory for reading, following a symlink in the last component
    /// (as `cat` would): for a file the user names as input, never for a file of the vault.
    package func openForReadingFollowingAt(_ path: String) throws(Errno) -> FileDescriptor {
        let fd = try retryingOnInterrupt(.open) {
            path.withCString { Glibc.openat(rawValue, $0, O_RDONLY | O_CLOEXEC) }
        }
        return try Self.aboveStandardStreams(fd)
    }

    /// Opens a directory relative to this one following a symlink in the last component
    /// (`O_DIRECTORY` without `O_NOFOLLOW`): for a link the caller has checked is trusted.
    package func openDirectoryFollowingAt(_ path: String) throws(Errno) -> FileDescriptor {
        let fd = try retryingOnInterrupt(.open) {
            path.withCString { Glibc.openat(rawValue, $0, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        }
        return try Self.aboveStandardStreams(fd)
    }

    /// Closes the descriptor. On Linux the descriptor is released even when close reports an error,
    /// so it is never retried; the error still matters (it can carry a delayed write failure).
    package func close() throws(Errno) {
        try notRetrying(.close) { Glibc.close(rawValue) }
    }

    /// Runs `body`, then closes the descriptor; an error from `body` wins over one from close.
    package func closeAfter<R>(_ body: () throws -> R) throws -> R {
        let result: R
        do {
            result = try body()
        } catch {
            try? close()
            throw error
        }
        try close()
        return result
    }

    /// Reads up to `buffer.count` bytes; returns how many were read (0 at end of file).
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingOnInterrupt(.read) { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Writes from `buffer`, possibly fewer bytes than asked; returns how many were written.
    package func write(_ buffer: UnsafeRawBufferPointer) throws(Errno) -> Int {
        let limited = try writableCount(buffer.count)
        // The seam was consulted above, so the call itself passes no operation.
        return try retryingOnInterrupt(nil) { Glibc.write(rawValue, buffer.baseAddress, limited) }
    }

    /// Reads up to `buffer.count` bytes at `offset` without moving the file offset (`pread`).
    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        try retryingOnInterrupt(.read) { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Writes from `buffer` at `offset` without moving the file offset (`pwrite`), possibly fewer bytes
    /// than asked.
    package func write(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) -> Int {
        let limited = try writableCount(buffer.count)
        // The seam was consulted above, so the call itself passes no operation.
        return try retryingOnInterrupt(nil) { Glibc.pwrite(rawValue, buffer.baseAddress, limited, off_t(offset)) }
    }

    /// How many of `count` bytes one write call may transfer: all of them, or in debug builds what the
    /// fault seam allows (a failure, or a short write).
    @inline(__always)
    private func writableCount(_ count: Int) throws(Errno) -> Int {
        #if DEBUG
            switch FaultInjection.decision(for: .write) {
            case .fail(let error): throw error
            case .shortWrite: return max(1, count / 2)
            case .proceed, .interleave: return count
            }
        #else
            return count
        #endif
    }

    /// Writes every byte of `buffer`, looping over short writes.
    package func writeAll(_ buffer: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < buffer.count {
            let written = try write(UnsafeRawBufferPointer(rebasing: buffer[offset...]))
            // A zero-byte write of a non-empty buffer would loop forever; the kernel reports ENOSPC
            // for a full disk, so treat it as that.
            if written == 0 { throw Errno.noSpace }
            offset += written
        }
    }

    /// Writes every byte of `bytes`, looping over short writes.
    package func writeAll(_ bytes: [UInt8]) throws(Errno) {
        let result: Result<Void, Errno> = bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) in try writeAll(buffer) }
        }
        try result.get()
    }

    /// Writes every byte of `buffer` at `offset` (`pwrite`, looping over short writes), without moving
    /// the file offset.
    package func writeAll(_ buffer: UnsafeRawBufferPointer, at offset: Int64) throws(Errno) {
        var done = 0
        while done < buffer.count {
            let written = try write(UnsafeRawBufferPointer(rebasing: buffer[done...]), at: offset + Int64(done))
            if written == 0 { throw Errno.noSpace }
            done += written
        }
    }

    /// Writes every byte of `bytes` at `offset` (`pwrite`, looping over short writes), without moving
    /// the file offset.
    package func writeAll(_ bytes: [UInt8], at offset: Int64) throws(Errno) {
        let result: Result<Void, Errno> = bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) in try writeAll(buffer, at: offset) }
        }
        try result.get()
    }

    /// Writes every byte of `bytes`, looping over short writes.
    package func writeAll(_ bytes: RawSpan) throws(Errno) {
        try bytes.withUnsafeBytes { (raw) throws(Errno) in try writeAll(raw) }
    }

    /// Writes every byte of `bytes` at `offset` (`pwrite`, looping over short writes).
    package func writeAll(_ bytes: RawSpan, at offset: Int64) throws(Errno) {
        try bytes.withUnsafeBytes { (raw) throws(Errno) in try writeAll(raw, at: offset) }
    }

    /// Reads into `span` until it is full or the file ends; returns how many bytes were read.
    package func read(filling span: inout MutableRawSpan) throws(Errno) -> Int {
        try span.withUnsafeMutableBytes { (raw) throws(Errno) in
            var filled = 0
            while filled < raw.count {
                let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]))
                if n == 0 { break }
                filled += n
            }
            return filled
        }
    }

    /// The first `count` bytes of the file from its offset, fewer only at its end (`read` until then).
    package func read(upTo count: Int) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let filled = try bytes.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) in
                var span = MutableRawSpan(_unsafeBytes: raw)
                return try read(filling: &span)
            }
        }.get()
        return Array(bytes[0..<filled])
    }

    /// Up to `count` bytes at `offset` (one `pread`), without moving the file offset; fewer at the end
    /// of the file.
    package func read(count: Int, at offset: Int64) throws(Errno) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let n = try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(Errno) in try read(into: buffer, at: offset) }
        }.get()
        return Array(bytes[0..<n])
    }

    /// Writes `bytes` at `offset` (one `pwrite`), without moving the file offset; returns how many were
    /// written.
    package func write(_ bytes: [UInt8], at offset: Int64) throws(Errno) -> Int {
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(Errno) in try write(buffer, at: offset) }
        }.get()
    }

    /// Sets the file's size to `size` bytes (`ftruncate`).
    package func truncate(to size: Int64) throws(Errno) {
        _ = try retryingOnInterrupt(.write) { Glibc.ftruncate(rawValue, off_t(size)) }
    }

    /// Reads the rest of the file, refusing more than `limit` bytes (a file that grew past what the
    /// caller accepts is `EFBIG`, never an unbounded allocation).
    package func readAll(limit: Int) throws(Errno) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = try chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try read(into: buffer) }
            }.get()
            if n == 0 { return result }
            if result.count + n > limit { throw Errno.fileTooLarge }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// Reads the rest of the file, expecting about `sizeHint` bytes (from `status()`): one allocation
    /// and, for a file that did not change, one read. Refuses more than `limit` bytes (`EFBIG`).
    package func readAll(sizeHint: Int, limit: Int) throws(Errno) -> [UInt8] {
        let capacity = min(max(sizeHint, 0), limit) + 1
        var failure: Errno?
        var result = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
            count = 0
            while count < capacity {
                do throws(Errno) {
                    let asked = capacity - count
                    let n = try read(
                        into: UnsafeMutableRawBufferPointer(start: buffer.baseAddress! + count, count: asked))
                    if n == 0 { return }
                    count += n
                    // A read that stopped short at exactly the size `fstat` gave met the end of the file: no
                    // second read to see the 0 (a file that grew would have filled the byte past the hint,
                    // and one written over in place is caught by its reader's checks either way). A short
                    // read before that size (FUSE, NFS) reads on.
                    if n < asked, count == sizeHint { return }
                } catch {
                    failure = error
                    return
                }
            }
        }
        if let failure { throw failure }
        guard result.count == capacity else { return result }
        // The file grew past the hint: read on, within the limit.
        let rest = try readAll(limit: limit - result.count + 1)
        result += rest
        if result.count > limit { throw Errno.fileTooLarge }
        return result
    }

    /// Flushes the file's data and metadata to stable storage. A failure is returned once and never
    /// retried: after a failed fsync the kernel may have dropped the dirty pages.
    package func sync() throws(Errno) {
        _ = try retryingOnInterrupt(.fsync) { Glibc.fsync(rawValue) }
    }

    /// Flushes the file's data, and the metadata needed to read it back (size, block map), to stable
    /// storage (`fdatasync`): when neither changed, no journal commit. Never retried after a failure.
    package func syncData() throws(Errno) {
        _ = try retryingOnInterrupt(.fsync) { Glibc.fdatasync(rawValue) }
    }

    /// Flushes every file of the file system that holds this file (`syncfs`).
    package func syncFileSystem() throws(Errno) {
        _ = try retryingOnInterrupt(.fsync) { vsys_syncfs(rawValue) }
    }

    /// Sets the file's mode bits exactly (`fchmod`), whatever the umask was at its creation.
    package func setPermissions(_ permissions: FilePermissions) throws(Errno) {
        _ = try retryingOnInterrupt(.chmod) { Glibc.fchmod(rawValue, mode_t(permissions.rawValue)) }
    }

    /// Sets the file's owner and group (`fchown`); nil leaves that one as it is.
    package func setOwner(user: UInt32? = nil, group: UInt32? = nil) throws(Errno) {
        _ = try retryingOnInterrupt(.chmod) {
            Glibc.fchown(rawValue, user.map { uid_t($0) } ?? uid_t.max, group.map { gid_t($0) } ?? gid_t.max)
        }
    }

    /// Sets the owner and group of `name` in this directory (`fchownat`, a symlink itself, never its
    /// target); nil leaves that one as it is.
    package func setOwnerAt(_ name: String, user: UInt32? = nil, group: UInt32? = nil) throws(Errno) {
        _ = try retryingOnInterrupt(.chmod) {
            name.withCString {
                Glibc.fchownat(
                    rawValue, $0, user.map { uid_t($0) } ?? uid_t.max, group.map { gid_t($0) } ?? gid_t.max,
                    AT_SYMLINK_NOFOLLOW)
            }
        }
    }

    /// The file's status (`fstat`).
    package func status() throws(Errno) -> FileStatus {
        var st = stat()
        _ = try retryingOnInterrupt(.stat) { Glibc.fstat(rawValue, &st) }
        return FileStatus(st)
    }

    /// The status of `path` relative to this directory, without following a symlink (`fstatat` with
    /// `AT_SYMLINK_NOFOLLOW`).
    package func statusAt(_ path: String) throws(Errno) -> FileStatus {
        var st = stat()
        _ = try retryingOnInterrupt(.stat) {
            path.withCString { Glibc.fstatat(rawValue, $0, &st, AT_SYMLINK_NOFOLLOW) }
        }
        return FileStatus(st)
    }
}
