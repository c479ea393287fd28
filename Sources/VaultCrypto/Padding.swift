/// Length-hiding padding of plaintexts (ISO/IEC 7816-4: a 0x80 byte, then zeros) to size buckets, so
/// that a file's size tells only the bucket of its secret's length: multiples of 64 bytes up to
/// 1 KiB, powers of two above (and multiples of 1 MiB above 1 MiB, so that the largest item does not
/// double).
package enum Padding {
    /// The padded size for a plaintext of `count` bytes (at least `count + 1`).
    package static func paddedCount(_ count: Int) -> Int {
        let minimum = count + 1
        if minimum <= 1024 { return (minimum + 63) / 64 * 64 }
        if minimum <= 1 << 20 {
            var bucket = 2048
            while bucket < minimum { bucket <<= 1 }
            return bucket
        }
        return ((minimum + (1 << 20) - 1) >> 20) << 20
    }

    /// `plaintext` followed by 0x80 and zeros up to `paddedCount(plaintext.count)`.
    package static func padded(_ plaintext: [UInt8]) -> [UInt8] {
        var result = [UInt8]()
        result.reserveCapacity(paddedCount(plaintext.count))
        result += plaintext
        result.append(0x80)
        result += [UInt8](repeating: 0, count: paddedCount(plaintext.count) - plaintext.count - 1)
        return result
    }

    /// The length of the plaintext inside padded `bytes`, or nil when they are not padded this way.
    package static func unpaddedCount(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBytes { raw -> Int? in
            // Eight zero bytes at a time first: every read of an item runs this over up to 63 of them.
            var end = raw.count
            while end >= 8, raw.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) == 0 { end -= 8 }
            while end > 0, raw[end - 1] == 0 { end -= 1 }
            guard end > 0, raw[end - 1] == 0x80 else { return nil }
            return end - 1
        }
    }
}
