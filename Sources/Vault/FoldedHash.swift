/// Byte strings hashed by folding eight bytes at a time into one word that goes to the hasher:
/// `[UInt8]`'s own hashing makes one hasher call per byte, which was a tenth of a get's time (`perf`
/// of `vault-bench`), and one call per word still a twelfth (callgrind). For cache keys only, whose
/// equality compares every byte: a collision (which only someone who writes items could arrange)
/// costs time, never a wrong answer.
enum FoldedHash {
    static func combine(_ bytes: some Collection<UInt8>, into hasher: inout Hasher) {
        var folded = UInt64(truncatingIfNeeded: bytes.count)
        var word: UInt64 = 0
        var shift: UInt64 = 0
        for byte in bytes {
            word |= UInt64(byte) << shift
            shift += 8
            if shift == 64 {
                folded = (folded ^ word) &* 0x9E37_79B9_7F4A_7C15
                folded ^= folded >> 29
                (word, shift) = (0, 0)
            }
        }
        hasher.combine(folded ^ word)
    }
}
