internal import CVaultSystem
internal import Glibc

/// The Linux kernel keyring (the user keyring, `@u`): small secrets that outlive a process, shared by
/// the processes of one user, dropped on expiry, on invalidation, or with the keyring (at reboot).
package enum KernelKeyring {
    /// Stores `bytes` as the "user" key `description`, replacing an older one, readable by every
    /// process of this user, expiring after `timeoutSeconds` (0: no timeout).
    package static func store(_ bytes: RawSpan, description: String, timeoutSeconds: UInt32) throws(Errno) {
        try bytes.withUnsafeBytes { (raw) throws(Errno) in
            try store(raw, description: description, timeoutSeconds: timeoutSeconds)
        }
    }

    /// Stores `bytes` (see `store(_:description:timeoutSeconds:)` of a span).
    package static func store(_ bytes: UnsafeRawBufferPointer, description: String, timeoutSeconds: UInt32)
        throws(Errno)
    {
        _ = try retryingOnInterrupt(.keyring) {
            description.withCString { vsys_keyring_add($0, bytes.baseAddress, UInt(bytes.count), timeoutSeconds) }
        }
    }

    /// Reads the key `description` into the bytes `range` of `span` (several keys can share one secure
    /// buffer); returns its length, or nil when there is no such key (never added, expired, revoked or
    /// invalidated). A length larger than the range means the key did not fit.
    package static func read(description: String, into span: inout MutableRawSpan, range: Range<Int>) throws(Errno)
        -> Int?
    {
        precondition(range.lowerBound >= 0 && range.upperBound <= span.byteCount, "a range outside the span")
        return try span.withUnsafeMutableBytes { (raw) throws(Errno) in
            try read(description: description, into: UnsafeMutableRawBufferPointer(rebasing: raw[range]))
        }
    }

    /// Reads the key into `buffer` (see `read(description:into:range:)`).
    package static func read(description: String, into buffer: UnsafeMutableRawBufferPointer) throws(Errno) -> Int? {
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
    package static func remove(description: String) throws(Errno) -> Bool {
        do {
            _ = try retryingOnInterrupt(.keyring) { description.withCString { vsys_keyring_remove($0) } }
            return true
        } catch  where error.isNoKey {
            return false
        }
    }
}

extension KernelKeyring {
    /// A key linked into the user keyring.
    package struct Entry: Sendable, Hashable {
        /// The key's serial number.
        package let id: Int32
        /// Its type ("user", "keyring", …).
        package let type: String
        /// Its description (the name it is found by).
        package let description: String
    }

    /// The keys linked directly into the user keyring that this process may view (others are left
    /// out), in the keyring's order.
    package static func userKeys() throws(Errno) -> [Entry] {
        var capacity = 64
        var ids: [Int32] = []
        while true {
            var buffer = [Int32](repeating: 0, count: capacity)
            let count = try retryingOnInterrupt(.keyring) {
                buffer.withUnsafeMutableBufferPointer { vsys_keyring_list($0.baseAddress, UInt(capacity)) }
            }
            if count <= capacity {
                ids = Array(buffer[0..<count])
                break
            }
            capacity = count  // keys were added meanwhile, or the first buffer was too small
        }
        var entries: [Entry] = []
        for id in ids {
            // A key that went away meanwhile, or that this process may not view, is none of its business.
            guard let text = try? describe(id) else { continue }
            let fields = text.split(separator: ";", maxSplits: 4, omittingEmptySubsequences: false)
            guard fields.count == 5 else { continue }
            entries.append(Entry(id: id, type: String(fields[0]), description: String(fields[4])))
        }
        return entries
    }

    private static func describe(_ id: Int32) throws(Errno) -> String {
        var length = 256
        while true {
            var buffer = [CChar](repeating: 0, count: length)
            let needed = try retryingOnInterrupt(.keyring) {
                buffer.withUnsafeMutableBufferPointer { vsys_keyring_describe(id, $0.baseAddress, UInt(length)) }
            }
            if needed <= length {
                return String(decoding: buffer[0..<max(0, needed - 1)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            }
            length = needed
        }
    }

    /// Invalidates the key `id` (found with `userKeys`); false when it was gone already.
    @discardableResult
    package static func remove(id: Int32) throws(Errno) -> Bool {
        do {
            _ = try retryingOnInterrupt(.keyring) { vsys_keyring_invalidate(id) }
            return true
        } catch  where error.isNoKey {
            return false
        }
    }
}

extension Errno {
    /// ENOKEY, EKEYEXPIRED or EKEYREVOKED: the keyring has no usable key of that name.
    package var isNoKey: Bool {
        rawValue == ENOKEY || rawValue == EKEYEXPIRED || rawValue == EKEYREVOKED
    }
}
