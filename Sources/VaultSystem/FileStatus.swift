internal import Glibc

/// What `stat` says of a file, in the few fields the vault checks.
package struct FileStatus: Sendable, Equatable {
    /// The kind of file.
    package enum Kind: Sendable, Equatable {
        /// A regular file.
        case regular
        /// A directory.
        case directory
        /// A symbolic link.
        case symbolicLink
        /// Anything else (device, FIFO, socket).
        case other
    }

    /// The kind of file.
    package let kind: Kind
    /// The permission bits.
    package let permissions: FilePermissions
    /// The owner's user id.
    package let ownerID: UInt32
    /// The file's group id.
    package let groupID: UInt32
    /// The size in bytes.
    package let size: Int64
    /// The number of hard links.
    package let linkCount: UInt64
    /// Device and inode: together they identify the file.
    package let device: UInt64
    /// Device and inode: together they identify the file.
    package let inode: UInt64
    /// Last modification, in nanoseconds since 1970.
    package let modificationNanoseconds: Int64
    /// Last status change (set by the kernel on every write, rename or chmod; no user can set it), in
    /// nanoseconds since 1970.
    package let changeNanoseconds: Int64

    /// What kind of file it is, in words for messages: "a regular file", "a FIFO", "a socket", …
    package var kindDescription: String {
        switch typeBits {
        case S_IFREG: return "a regular file"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFSOCK: return "a socket"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        default: return "a file of unknown type"
        }
    }

    /// Whether the sticky bit is set: in a directory, only an entry's owner (or the directory's, or
    /// root) may rename or remove it.
    package var isSticky: Bool { typeBits & S_IFMT == S_IFDIR && modeBits & S_ISVTX != 0 }

    /// The file type bits of `st_mode` (`S_IFMT`).
    private let typeBits: UInt32
    /// The whole of `st_mode`.
    private let modeBits: UInt32

    init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        default: kind = .other
        }
        permissions = FilePermissions(rawValue: st.st_mode)
        typeBits = st.st_mode & S_IFMT
        modeBits = st.st_mode
        ownerID = st.st_uid
        groupID = st.st_gid
        size = Int64(st.st_size)
        linkCount = UInt64(st.st_nlink)
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        modificationNanoseconds = Self.nanoseconds(st.st_mtim)
        changeNanoseconds = Self.nanoseconds(st.st_ctim)
    }

    /// `time` in nanoseconds since the epoch, held at the ends of `Int64` (the years 1677 and 2262): a
    /// file's owner can set any modification time (`touch -d 2300-01-01`), and file systems keep ones
    /// far beyond; these are compared for change only.
    static func nanoseconds(_ time: timespec) -> Int64 {
        let (product, overflow) = Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return time.tv_sec < 0 ? .min : .max }
        let (sum, sumOverflow) = product.addingReportingOverflow(Int64(time.tv_nsec))
        return sumOverflow ? .max : sum
    }
}
