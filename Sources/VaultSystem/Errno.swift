internal import Glibc

/// A POSIX error number, as a typed error.
@usableFromInline package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw `errno` value.
    package let rawValue: Int32

    /// Wraps a raw `errno` value.
    package init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// The value of `errno` for the calling thread, right now.
    static var current: Errno { Errno(rawValue: errno) }

    /// The system's text for this error, e.g. "No space left on device".
    @usableFromInline package var description: String {
        var buffer = [CChar](repeating: 0, count: 256)
        // The XSI strerror_r fills the buffer; strerror itself is not thread-safe.
        let status = buffer.withUnsafeMutableBufferPointer { strerror_r(rawValue, $0.baseAddress!, $0.count) }
        guard status == 0 else { return "errno \(rawValue)" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// EINTR: interrupted by a signal (retried by this module, never returned).
    package static let interrupted = Errno(rawValue: EINTR)
    /// ENOENT: no such file or directory.
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// EEXIST: the file exists.
    package static let fileExists = Errno(rawValue: EEXIST)
    /// EIO: input/output error.
    package static let ioError = Errno(rawValue: EIO)
    /// ENOSPC: no space left on device.
    package static let noSpace = Errno(rawValue: ENOSPC)
    /// EFBIG: file too large.
    package static let fileTooLarge = Errno(rawValue: EFBIG)
    /// EDQUOT: disk quota exceeded.
    package static let diskQuotaExceeded = Errno(rawValue: EDQUOT)
    /// EACCES: permission denied.
    package static let permissionDenied = Errno(rawValue: EACCES)
    /// EPERM: operation not permitted.
    package static let notPermitted = Errno(rawValue: EPERM)
    /// ELOOP: a symbolic link where `O_NOFOLLOW` forbids one.
    package static let tooManySymbolicLinks = Errno(rawValue: ELOOP)
    /// ENOTDIR: not a directory.
    package static let notDirectory = Errno(rawValue: ENOTDIR)
    /// EISDIR: is a directory.
    package static let isDirectory = Errno(rawValue: EISDIR)
    /// ENOTEMPTY: directory not empty.
    package static let directoryNotEmpty = Errno(rawValue: ENOTEMPTY)
    /// EBADF: bad file descriptor.
    package static let badFileDescriptor = Errno(rawValue: EBADF)
    /// EAGAIN / EWOULDBLOCK: try again (a non-blocking lock is held elsewhere).
    package static let wouldBlock = Errno(rawValue: EAGAIN)
    /// EINVAL: invalid argument.
    package static let invalidArgument = Errno(rawValue: EINVAL)
    /// ENAMETOOLONG: file name too long.
    @usableFromInline package static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// EROFS: read-only file system.
    package static let readOnlyFileSystem = Errno(rawValue: EROFS)
    /// ENOSYS: the system call is not implemented.
    package static let notImplemented = Errno(rawValue: ENOSYS)
    /// ENXIO: no such device or address (opening a socket, or a FIFO for writing without a reader).
    package static let noSuchDeviceOrAddress = Errno(rawValue: ENXIO)
    /// EOPNOTSUPP (ENOTSUP on Linux): the operation is not supported, here by the file system.
    package static let notSupported = Errno(rawValue: EOPNOTSUPP)
}
