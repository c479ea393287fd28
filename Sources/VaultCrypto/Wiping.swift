internal import CSodium
import FoundationEssentials

/// The one way the vault zeroes secret bytes: libsodium's `sodium_memzero`, a store the optimiser
/// cannot drop (a plain loop of zeros into memory that is freed next may be removed as dead).
package enum Wiping {
    /// Overwrites `bytes` with zeros.
    package static func wipe(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        sodium_memzero(base, bytes.count)
    }
}

extension Array where Element == UInt8 {
    /// Overwrites the array's bytes with zeros in place (`Wiping.wipe`). A copy that shares the
    /// storage gets its own first, and copies made earlier are not reached.
    package mutating func wipe() {
        withUnsafeMutableBytes { Wiping.wipe($0) }
    }
}

extension Data {
    /// Overwrites the bytes this value owns with zeros (`Wiping.wipe`). A copy that shares the storage
    /// gets its own first, and copies made earlier are not reached.
    package mutating func wipe() {
        guard !isEmpty else { return }
        withUnsafeMutableBytes { Wiping.wipe($0) }
    }
}
