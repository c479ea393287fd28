/// Unix permission bits (the low 12 bits of a mode).
public struct FilePermissions: OptionSet, Hashable, Sendable, CustomStringConvertible {
    /// The raw mode bits.
    public let rawValue: UInt32

    /// Wraps raw mode bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue & 0o7777 }

    /// 0600.
    public static let ownerReadWrite = FilePermissions(rawValue: 0o600)
    /// 0400.
    public static let ownerRead = FilePermissions(rawValue: 0o400)
    /// 0700.
    public static let ownerAll = FilePermissions(rawValue: 0o700)
    /// rw-r--r--: a file everyone may read (the vault's marker).
    public static let ownerWriteAllRead = FilePermissions(rawValue: 0o644)
    /// rw-r-----: a file its group may read (a shared group's key).
    public static let ownerWriteGroupRead = FilePermissions(rawValue: 0o640)
    /// rw-rw----: a file its group may write (the items and lock of a shared group).
    public static let ownerAndGroupReadWrite = FilePermissions(rawValue: 0o660)
    /// rwxrws--- with the setgid bit: a shared group's directory (its files get the directory's group).
    public static let sharedDirectory = FilePermissions(rawValue: 0o2770)
    /// rwx--x--x: a directory others may pass through, not list (a vault with shared groups).
    public static let ownerAllOthersTraverse = FilePermissions(rawValue: 0o711)
    /// Any group or other bit (0077).
    public static let groupOrOtherAny = FilePermissions(rawValue: 0o077)
    /// Group or other write (0022).
    public static let groupOrOtherWrite = FilePermissions(rawValue: 0o022)

    /// Octal, as `ls` and `chmod` speak it: "0600".
    public var description: String {
        let octal = String(rawValue, radix: 8)
        return String(repeating: "0", count: max(0, 4 - octal.count)) + octal
    }
}
