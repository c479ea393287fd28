internal import CSodium

/// Comparison whose time does not depend on where two byte strings differ (`sodium_memcmp`), for tags
/// and keys.
package enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes; different lengths are unequal (the length is not
    /// secret).
    package static func equals(_ a: UnsafeRawBufferPointer, _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return b.withUnsafeBytes { sodium_memcmp(a.baseAddress!, $0.baseAddress!, a.count) == 0 }
    }

    /// Whether `a` and `b` hold the same bytes.
    package static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { equals($0, b) }
    }
}
