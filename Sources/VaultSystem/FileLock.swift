internal import CVaultSystem

extension FileDescriptor {
    /// The kind of open-file-description lock.
    public enum LockKind: Int32, Sendable {
        /// Many holders at once.
        case shared = 1
        /// One holder.
        case exclusive = 2
    }

    /// Takes an OFD lock on the whole file (`F_OFD_SETLKW`), waiting for it. OFD locks belong to the
    /// open file description: two opens in one process exclude each other, and the kernel drops the
    /// lock when the last descriptor of it closes, including when the process dies.
    public func lock(_ kind: LockKind) throws(Errno) {
        _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, kind.rawValue, 1) }
    }

    /// Tries to take an OFD lock without waiting; returns false when another holder has it.
    public func tryLock(_ kind: LockKind) throws(Errno) -> Bool {
        do {
            _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, kind.rawValue, 0) }
            return true
        } catch  where error == .wouldBlock || error == .permissionDenied {
            return false
        }
    }

    /// Releases an OFD lock held through this descriptor.
    public func unlock() throws(Errno) {
        _ = try retryingOnInterrupt(.lock) { vsys_ofd_lock(rawValue, 0, 0) }
    }
}
