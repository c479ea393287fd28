/// Byte strings hashed by folding eight bytes at a time into one word that goes to the hasher:
/// `[UInt8]`'s own hashing makes one hasher call per byte, which was a tenth of a get's time (`perf`
/// of `vault-bench`), and one call per word still a twelfth (callgrind). For cache keys only, whose
/// equality compares every byte: a collision (which only someone who writes items could arrange)
/// costs time, never a wrong answer.
enum FoldedHash {
    static func combine(_ bytes: Span<UInt8>, into hasher: inout Hasher) {
        var folded = UInt64(truncatingIfNeeded: bytes.count)
        var index = 0
        while index + 8 <= bytes.count {
            var word: UInt64 = 0
            for offset in 0..<8 { word |= UInt64(bytes[index + offset]) << UInt64(8 * offset) }
            folded = (folded ^ word) &* 0x9E37_79B9_7F4A_7C15
            folded ^= folded >> 29
            index += 8
        }
        var word: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            word |= UInt64(bytes[index]) << shift
            shift += 8
            index += 1
        }
        hasher.combine(folded ^ word)
    }
}
