internal import CVaultSystem
internal import Glibc

/// The Linux kernel keyring (the user keyring, `@u`): small secrets that outlive a process, shared by
/// the processes of one user, dropped on expiry, on invalidation, or with the keyring (at reboot).
public enum KernelKeyring {
    /// Stores `bytes` as the "user" key `description`, replacing an older one, readable by every
    /// process of this user, expiring after `timeoutSeconds` (0: no timeout).
    public static func store(_ bytes: UnsafeRawBufferPointer, description: String, timeoutSeconds: UInt32)
        throws(Errno)
    {
        _ = try retryingOnInterrupt(.keyring) {
            description.withCString { vsys_keyring_add($0, bytes.baseAddress, UInt(bytes.count), timeoutSeconds) }
        }
    }

    /// Reads the key `description` into `buffer`; returns its length, or nil when there is no such key
    /// (never added, expired, revoked or invalidated). A length larger than the buffer means the key
    /// did not fit.
    public static func read(description: String, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
        do {
            return try retryingOnInterrupt(.keyring) {
                description.withCString { vsys_keyring_read($0, buffer.baseAddress, UInt(buffer.count)) }
            }
        } catch  where error.isNoKey {
            return nil
        }
    }

    /// Drops the key `description`; false when there was none.
    @discardableResult
    public static func remove(description: String) throws(Errno) -> Bool {
        do {
            _ = try retryingOnInterrupt(.keyring) { description.withCString { vsys_keyring_remove($0) } }
            return true
        } catch  where error.isNoKey {
            return false
        }
    }
}

extension Errno {
    /// ENOKEY, EKEYEXPIRED or EKEYREVOKED: the keyring has no usable key of that name.
    public var isNoKey: Bool {
        rawValue == ENOKEY || rawValue == EKEYEXPIRED || rawValue == EKEYREVOKED
    }
}
