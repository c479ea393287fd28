import VaultSystem

/// Byte 0 of `.lock`: what the last holder of the write lock left behind. OFD locks die with their
/// process, the byte stays, so the next writer learns what it must clean up.
///
/// Not synced: after a power cut a journaling file system (ext4 with its journal, xfs) holds only what
/// its journal committed, so no spare can then be an item's file on disk. The mark decides whether
/// spares may be written in place (`SpareFile`), so anything but a clearly read `idle`
/// counts as the worst case.
enum WriterMark: UInt8 {
    /// The last writer let go normally: every exchange it made through `.spare` is durable. (Group
    /// commit's exchanges, through slot spares, may not be yet when their writer lets go: their
    /// slots' marks say so, `GroupCommit`.)
    case idle = 0
    /// A writer holds the lock, or died holding it: temp files may be left anywhere, and a spare may
    /// be an item's file on disk (an exchange without its directory fsync).
    case active = 1
    /// The last writer let go after a write through a spare failed: a spare may be an item's file.
    case sparesUntrusted = 2

    /// The mark in `lockFile`; nil when it cannot be read (or holds what no writer leaves).
    static func read(_ lockFile: FileDescriptor) -> WriterMark? {
        guard let bytes = try? lockFile.read(count: 1, at: 0), bytes.count == 1 else { return nil }
        return WriterMark(rawValue: bytes[0])
    }

    /// Sets the mark in `lockFile`; false when it could not be written.
    @discardableResult
    func write(to lockFile: FileDescriptor) -> Bool {
        (try? lockFile.write([rawValue], at: 0)) == 1
    }

    /// Sets `active` in `lockFile` (and in a group's, withdraws the tidy stamp), or throws: a writer
    /// whose death could go unnoticed does not write.
    static func markActive(_ lockFile: FileDescriptor, withdrawingStamp: Bool) throws(Errno) {
        guard try lockFile.write([active.rawValue], at: 0) == 1 else { throw .ioError }
        if withdrawingStamp { try lockFile.writeAll([UInt8](repeating: 0, count: 16), at: tidyBootOffset) }
    }

    /// Bytes 144..<160 of a group's `.lock`: the boot (`BootIdentifier`) in which the last holder let go
    /// with nothing of its own or of a predecessor left to clean (no temp file, no interrupted move, no
    /// version past the bound), zeros otherwise; byte 160, the bound on versions it pruned to. Not
    /// synced either: after a power cut the boot differs, and a temp file whose name the journal kept is
    /// swept as before.
    static let tidyBootOffset: Int64 = 144
    static let tidyBoundOffset: Int64 = 160

    /// Stamps `lockFile` tidy in this boot, with the bound on versions (`versionsKept`) its holder
    /// pruned to, as its holder lets go after a normal finish.
    static func stampTidy(_ lockFile: FileDescriptor, versionsKept: Int) {
        guard let boot = BootIdentifier.current else { return }
        _ = try? lockFile.writeAll(boot + [UInt8(clamping: versionsKept)], at: tidyBootOffset)
    }

    /// Whether the last holder of `lockFile` let go normally, in this boot, leaving nothing to clean for
    /// a writer that keeps `versionsKept` versions: the mark `idle` (`found`), the stamp of this boot, and
    /// a bound no higher (a handle opened before the bound was lowered prunes to the old one).
    static func leftTidy(_ lockFile: FileDescriptor, found: WriterMark?, versionsKept: Int) -> Bool {
        guard found == .idle, let boot = BootIdentifier.current,
            let stamp = try? lockFile.read(count: boot.count + 1, at: tidyBootOffset), stamp.count == boot.count + 1
        else { return false }
        return stamp.prefix(boot.count).elementsEqual(boot) && Int(stamp[boot.count]) <= versionsKept
    }
}
