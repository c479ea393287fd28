internal import CVaultSystem
internal import Glibc

extension FileDescriptor {
    /// Creates a directory relative to this one.
    package func makeDirectoryAt(_ path: String, permissions: FilePermissions = .ownerAll) throws(Errno) {
        _ = try retryingOnInterrupt(.mkdir) {
            path.withCString { Glibc.mkdirat(rawValue, $0, permissions.rawValue) }
        }
    }

    /// Atomically renames `source` (relative to this directory) to `destination` (relative to
    /// `destinationDirectory`), replacing an existing destination.
    package func renameAt(_ source: String, to destination: String, in destinationDirectory: FileDescriptor? = nil)
        throws(Errno)
    {
        let target = (destinationDirectory ?? self).rawValue
        _ = try retryingOnInterrupt(.rename) {
            source.withCString { s in destination.withCString { d in Glibc.renameat(rawValue, s, target, d) } }
        }
    }

    /// Atomically swaps the names `first` and `second` in this directory (`renameat2` with
    /// `RENAME_EXCHANGE`): each then names the other's file. Both must exist (`ENOENT` otherwise); a
    /// file system that cannot exchange fails with `EINVAL` or `ENOTSUP`.
    package func exchangeAt(_ first: String, with second: String) throws(Errno) {
        _ = try retryingOnInterrupt(.rename) {
            first.withCString { a in second.withCString { b in vsys_exchange_at(rawValue, a, b) } }
        }
    }

    /// Renames `source` to `destination` in this directory only if no `destination` exists
    /// (`renameat2` with `RENAME_NOREPLACE`): an atomic create-if-absent of a complete file that, unlike a
    /// hard link, never shows the file with two links. `EEXIST` when `destination` exists; a file
    /// system that cannot fails with `EINVAL` or `ENOTSUP`.
    package func renameIfAbsentAt(_ source: String, to destination: String) throws(Errno) {
        _ = try retryingOnInterrupt(.rename) {
            source.withCString { s in destination.withCString { d in vsys_rename_noreplace_at(rawValue, s, d) } }
        }
    }

    /// Makes a hard link `destination` to `source`, both relative to this directory; fails with
    /// `EEXIST` when `destination` exists, which makes it an atomic create-if-absent of a complete file.
    package func linkAt(_ source: String, to destination: String) throws(Errno) {
        _ = try retryingOnInterrupt(.link) {
            source.withCString { s in destination.withCString { d in Glibc.linkat(rawValue, s, rawValue, d, 0) } }
        }
    }

    /// Opens a new regular file in this directory that has no name (`O_TMPFILE`; write-only, or also for
    /// reading back when `readable`): it vanishes with its last descriptor until `link(unnamed:as:)` names
    /// it, so a process killed while writing it leaves nothing. `EOPNOTSUPP` (or `EISDIR`) where the file
    /// system cannot.
    package func openUnnamedFile(permissions: FilePermissions = .ownerReadWrite, readable: Bool = false)
        throws(Errno) -> FileDescriptor
    {
        let flags = vsys_o_tmpfile() | (readable ? O_RDWR : O_WRONLY) | O_CLOEXEC
        let fd = try retryingOnInterrupt(.open) { Glibc.openat(rawValue, ".", flags, permissions.rawValue) }
        return try Self.aboveStandardStreams(fd)
    }

    /// Gives the unnamed file `file` (from `openUnnamedFile`) the name `name` in this directory
    /// (`linkat` of `/proc/self/fd/N`, following that link): `EEXIST` when the name is taken.
    package func link(unnamed file: FileDescriptor, as name: String) throws(Errno) {
        let source = "/proc/self/fd/\(file.rawValue)"
        _ = try retryingOnInterrupt(.link) {
            source.withCString { s in
                name.withCString { d in Glibc.linkat(AT_FDCWD, s, rawValue, d, AT_SYMLINK_FOLLOW) }
            }
        }
    }

    /// Creates a symbolic link `name` relative to this directory whose target is the text `target`.
    /// The vault never follows links; it uses them as tiny records whose text is file system metadata,
    /// made durable by an fsync of the directory alone (no data fsync of their own).
    package func makeSymbolicLinkAt(_ name: String, target: String) throws(Errno) {
        _ = try retryingOnInterrupt(.symlink) {
            target.withCString { t in name.withCString { n in Glibc.symlinkat(t, rawValue, n) } }
        }
    }

    /// The target of the symbolic link `name` relative to this directory, into `buffer`; returns its
    /// length (a length equal to the buffer's means it may have been cut: treat as too long). Never
    /// follows the link. Not a link is `EINVAL`.
    package func readSymbolicLinkAt(_ name: String, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int {
        try retryingOnInterrupt(.readLink) {
            name.withCString { Glibc.readlinkat(rawValue, $0, buffer.baseAddress!, buffer.count) }
        }
    }

    /// `readSymbolicLinkAt` of a name assembled in place.
    @usableFromInline package func readSymbolicLinkAt(_ name: EntryName, into buffer: UnsafeMutableRawBufferPointer)
        throws(Errno) -> Int
    {
        try name.withCString { (name) throws(Errno) in
            try retryingOnInterrupt(.readLink) { Glibc.readlinkat(rawValue, name, buffer.baseAddress!, buffer.count) }
        }
    }

    /// Reads the target of the symbolic link `name` (assembled in place) into a buffer on the stack
    /// (128 bytes) and hands `body` the target's bytes, or nil when it fills the buffer (it may have been
    /// cut): for a look-up on every read, with no allocation. Never follows the link; not a link is
    /// `EINVAL`.
    @inlinable
    package func withSymbolicLinkAt<R>(_ name: EntryName, _ body: (Span<UInt8>?) -> R) throws(Errno) -> R {
        var buffer = InlineArray<128, UInt8>(repeating: 0)
        var target = buffer.mutableSpan
        let result: Result<Int, Errno> = target.withUnsafeMutableBytes { raw in
            Result { () throws(Errno) in try readSymbolicLinkAt(name, into: raw) }
        }
        let count = try result.get()
        return count < buffer.count ? body(buffer.span.extracting(0..<count)) : body(nil)
    }

    /// The target text of the symbolic link `name` relative to this directory (`readlinkat`, which
    /// never follows it); at most 255 bytes are read, more is `ENAMETOOLONG`. Not a link is `EINVAL`.
    package func readSymbolicLinkAt(_ name: String) throws(Errno) -> String {
        try Self.symbolicLinkText { (raw) throws(Errno) in try readSymbolicLinkAt(name, into: raw) }
    }

    /// `readSymbolicLinkAt` of a name assembled in place.
    package func readSymbolicLinkAt(_ name: EntryName) throws(Errno) -> String {
        try Self.symbolicLinkText { (raw) throws(Errno) in try readSymbolicLinkAt(name, into: raw) }
    }

    /// The target that `read` puts into a buffer of 256 bytes, as text.
    static func symbolicLinkText(_ read: (UnsafeMutableRawBufferPointer) throws(Errno) -> Int) throws(Errno) -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = try buffer.withUnsafeMutableBytes { raw in Result { () throws(Errno) in try read(raw) } }.get()
        guard count < buffer.count else { throw Errno.nameTooLong }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Removes the file `path` relative to this directory.
    package func unlinkAt(_ path: String) throws(Errno) {
        _ = try retryingOnInterrupt(.unlink) { path.withCString { Glibc.unlinkat(rawValue, $0, 0) } }
    }

    /// Removes the empty directory `path` relative to this directory.
    package func removeDirectoryAt(_ path: String) throws(Errno) {
        _ = try retryingOnInterrupt(.unlink) { path.withCString { Glibc.unlinkat(rawValue, $0, AT_REMOVEDIR) } }
    }

    /// The names in this directory (without "." and ".."), in no particular order.
    package func entryNames() throws(Errno) -> [String] {
        // A descriptor of its own, from a new open of "." rather than a dup: a dup shares the
        // directory offset with every other copy (other threads, and a forked child's inherited
        // descriptor), and two listings through one offset skip entries.
        let opened = try retryingOnInterrupt(.readDirectory) {
            Glibc.openat(rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        let own = try FileDescriptor.aboveStandardStreams(opened)
        defer { try? own.close() }
        let size = 32 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        var names: [String] = []
        while true {
            let filled: Int
            do {
                filled = try retryingOnInterrupt(nil) { vsys_read_directory(own.rawValue, buffer, UInt(size)) }
            } catch {
                // A directory removed while open has no entries (readdir reads ENOENT as the end too).
                if error == .noSuchFileOrDirectory { return names }
                throw error
            }
            if filled == 0 { return names }
            var offset: UInt = 0
            while let entry = vsys_directory_entry_name(buffer, UInt(filled), &offset) {
                let name = String(cString: entry)
                if name != "." && name != ".." { names.append(name) }
            }
        }
    }
}
