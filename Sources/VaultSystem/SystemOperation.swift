/// The system calls that go through this module, named so that the fault seam can target them.
package enum SystemOperation: String, Sendable, CaseIterable, Hashable {
    /// open(2) and openat(2).
    case open
    /// read(2) and pread(2).
    case read
    /// write(2), pwrite(2) and ftruncate(2).
    case write
    /// fsync(2) and fdatasync(2).
    case fsync
    /// close(2).
    case close
    /// renameat(2) and renameat2(2) with RENAME_EXCHANGE.
    case rename
    /// linkat(2).
    case link
    /// unlinkat(2).
    case unlink
    /// mkdirat(2).
    case mkdir
    /// fstat(2) and fstatat(2).
    case stat
    /// fcntl(2) locks.
    case lock
    /// Reading a directory's entries.
    case readDirectory
    /// symlinkat(2).
    case symlink
    /// readlinkat(2).
    case readLink
    /// add_key(2) and keyctl(2) on the kernel keyring.
    case keyring
    /// fchmod(2) and fchown(2).
    case chmod
    /// pthread_create(3).
    case startThread
    /// fork(2) and execve(2): starting a process.
    case startProcess
}
