/// Unix permission bits (the low 12 bits of a mode).
@usableFromInline package struct FilePermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw mode bits.
    @usableFromInline package let rawValue: UInt32

    /// Wraps raw mode bits.
    @inlinable package init(rawValue: UInt32) { self.rawValue = rawValue & 0o7777 }

    /// 0600.
    package static let ownerReadWrite = FilePermissions(rawValue: 0o600)
    /// 0400.
    package static let ownerRead = FilePermissions(rawValue: 0o400)
    /// 0700.
    package static let ownerAll = FilePermissions(rawValue: 0o700)
    /// rw-r--r--: a file everyone may read (the vault's marker).
    package static let ownerWriteAllRead = FilePermissions(rawValue: 0o644)
    /// rw-r-----: a file its group may read (a shared group's key).
    package static let ownerWriteGroupRead = FilePermissions(rawValue: 0o640)
    /// rw-rw----: a file its group may write (the items and lock of a shared group).
    package static let ownerAndGroupReadWrite = FilePermissions(rawValue: 0o660)
    /// rwxrws--- with the setgid bit: a shared group's directory (its files get the directory's group).
    package static let sharedDirectory = FilePermissions(rawValue: 0o2770)
    /// rwx--x--x: a directory others may pass through, not list (a vault with shared groups).
    package static let ownerAllOthersTraverse = FilePermissions(rawValue: 0o711)
    /// Any group or other bit (0077).
    package static let groupOrOtherAny = FilePermissions(rawValue: 0o077)
    /// Group or other write (0022).
    package static let groupOrOtherWrite = FilePermissions(rawValue: 0o022)

    /// Octal, as `ls` and `chmod` speak it: "0600".
    @usableFromInline package var description: String {
        let octal = String(rawValue, radix: 8)
        return String(repeating: "0", count: max(0, 4 - octal.count)) + octal
    }
}
