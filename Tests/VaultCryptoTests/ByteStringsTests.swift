import Testing

@testable import VaultCrypto

/// `FoldedHash` reads eight bytes at a time and `hasSameBytes` compares with `memcmp`: at every length
/// and at every position of a difference they give what the byte-at-a-time definitions give.
@Suite struct ByteStringsTests {
    /// The definition: the bytes folded into little-endian words, a byte at a time.
    static func referenceFold(_ bytes: [UInt8]) -> UInt64 {
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
        return folded ^ word
    }

    /// `hasSameBytes` outside `#expect`, which cannot take a `Span` (not escapable).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { a.span.hasSameBytes(as: b.span) }

    static func bytes(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) } }

    @Test func foldedHashIsTheByteAtATimeFoldAtEveryLength() {
        for count in 0...41 {
            let bytes = Self.bytes(count)
            var folded = Hasher()
            FoldedHash.combine(bytes.span, into: &folded)
            var reference = Hasher()
            reference.combine(Self.referenceFold(bytes))
            #expect(folded.finalize() == reference.finalize(), "length \(count)")
        }
    }

    @Test func foldedHashOfASliceIsThatOfItsBytes() {
        let bytes = Self.bytes(40)
        var ofSlice = Hasher()
        FoldedHash.combine(bytes[3..<30].span, into: &ofSlice)
        var ofCopy = Hasher()
        FoldedHash.combine(Array(bytes[3..<30]).span, into: &ofCopy)
        #expect(ofSlice.finalize() == ofCopy.finalize())
    }

    @Test func sameBytesAtEveryLengthAndEveryPositionOfADifference() {
        for count in 0...33 {
            let bytes = Self.bytes(count)
            #expect(Self.same(bytes, Array(bytes)))
            for position in 0..<count {
                var other = bytes
                other[position] ^= 0x80
                #expect(!Self.same(bytes, other), "length \(count), position \(position)")
            }
            #expect(!Self.same(bytes, bytes + [0]))
        }
        let bytes = Self.bytes(20)
        let sliceIsSame = bytes[1..<17].span.hasSameBytes(as: Array(bytes[1..<17]).span)
        #expect(sliceIsSame)
    }
}
