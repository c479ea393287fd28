import VaultSystem

/// Which file a `group.key` read was: its inode and change time (an inode number is reused once freed,
/// but the file that reuses it is changed later).
struct GroupKeyFileIdentity: Hashable {
    let inode: UInt64
    let changeNanoseconds: Int64

    init(_ status: FileStatus) {
        inode = status.inode
        changeNanoseconds = status.changeNanoseconds
    }
}
