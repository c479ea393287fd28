internal import CVaultSystem

extension FileDescriptor {
    /// The kind of open-file-description lock.
    package enum LockKind: Int32, Sendable {
        /// Many holders at once.
        case shared = 1
        /// One holder.
        case exclusive = 2
    }

    /// Takes an OFD lock on byte `byte` of the file (`F_OFD_SETLKW`), waiting for it. OFD locks belong
    /// to the open file description: two opens in one process exclude each other (two threads using one
    /// descriptor do not), and the kernel drops the lock when the last descriptor of it closes,
    /// including when the process dies. Locks on different bytes are independent: the vault's write
    /// lock is byte 0 of a `.lock` file, and group commit locks others (`GroupCommit`).
    package func lock(_ kind: LockKind, byte: Int64 = 0) throws(Errno) {
        _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, kind.rawValue, 1, byte) }
    }

    /// Tries to take an OFD lock on byte `byte` without waiting; returns false when another holder has it.
    package func tryLock(_ kind: LockKind, byte: Int64 = 0) throws(Errno) -> Bool {
        do {
            _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, kind.rawValue, 0, byte) }
            return true
        } catch  where error == .wouldBlock || error == .permissionDenied {
            return false
        }
    }

    /// Releases the OFD lock on byte `byte` held through this descriptor (locks on other bytes stay).
    package func unlock(byte: Int64 = 0) throws(Errno) {
        _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, 0, 0, byte) }
    }
}
