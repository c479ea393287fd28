internal import Glibc

/// Byte strings hashed eight bytes at a time and compared by `memcmp`, for cache keys and attribute filters (not
/// constant-time: `ConstantTime` compares secrets). A get hashes and compares its primary key and its
/// metadata bytes, and the byte-at-a-time loops these replace took about a tenth of its instructions
/// (callgrind of `vault-bench --profile-gets`).
///
/// `FoldedHash` folds eight bytes at a time into one word that goes to the hasher: `[UInt8]`'s own
/// hashing makes one hasher call per byte. For keys whose equality compares every byte: a collision
/// (which only someone who writes items could arrange) costs time, never a wrong answer.
package enum FoldedHash {
    /// Feeds `bytes` to `hasher` as one word that depends on every byte and on the length.
    package static func combine(_ bytes: Span<UInt8>, into hasher: inout Hasher) {
        var folded = UInt64(truncatingIfNeeded: bytes.count)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset + 8 <= raw.count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                folded = (folded ^ word) &* 0x9E37_79B9_7F4A_7C15
                folded ^= folded >> 29
                offset += 8
            }
            var word: UInt64 = 0
            var shift: UInt64 = 0
            while offset < raw.count {
                word |= UInt64(raw[offset]) << shift
                shift += 8
                offset += 1
            }
            folded ^= word
        }
        hasher.combine(folded)
    }
}

extension Span where Element == UInt8 {
    /// Whether both hold the same bytes (stops at the first difference).
    package func hasSameBytes(as other: Span<UInt8>) -> Bool {
        guard count == other.count else { return false }
        guard count > 0 else { return true }
        return withUnsafeBytes { a in
            other.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 }
        }
    }
}
