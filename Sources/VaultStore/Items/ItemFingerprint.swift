import VaultSystem

/// What identifies one version of an item file without reading it: its generation record (read
/// first, as readers do) and the file's identity and times. Every update by the vault changes the
/// generation record, and any replacement of the file changes its inode or change time (which no user
/// can set), so an unchanged fingerprint means unchanged contents, once the file is settled
/// (`isSettled`).
package struct ItemFingerprint: Sendable, Hashable {
    /// The generation record's text as read (nil: there was none).
    package let recordText: String?
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modificationNanoseconds: Int64
    let changeNanoseconds: Int64

    /// Whether the file last changed before `now`, a `FileTimestampClock` reading taken before the
    /// file was looked at. Change times are only as fine as that clock's tick, so a file changed in the
    /// current tick could be deleted and re-added (no record at generation 1, its inode reused) within
    /// it with an equal fingerprint: such a fingerprint must not be trusted yet ("racy clean", as git
    /// treats its index). Any later change is stamped at `now` or after.
    package func isSettled(now: Int64) -> Bool {
        changeNanoseconds < now
    }
}

extension ItemFingerprint {
    /// The fingerprint of a file with `status` whose generation record reads `recordText`.
    init(recordText: String?, status: FileStatus) {
        self.init(
            recordText: recordText, device: status.device, inode: status.inode, size: status.size,
            modificationNanoseconds: status.modificationNanoseconds, changeNanoseconds: status.changeNanoseconds)
    }
}
