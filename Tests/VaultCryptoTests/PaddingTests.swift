import Testing

@testable import VaultCrypto

@Suite struct PaddingTests {
    @Test func bucketsAreMultiplesOf64ThenPowersOfTwoThenMebibytes() {
        #expect(Padding.paddedCount(0) == 64)
        #expect(Padding.paddedCount(63) == 64)
        #expect(Padding.paddedCount(64) == 128)
        #expect(Padding.paddedCount(1023) == 1024)
        #expect(Padding.paddedCount(1024) == 2048)
        #expect(Padding.paddedCount(5000) == 8192)
        #expect(Padding.paddedCount(1 << 20) == 2 << 20)
        #expect(Padding.paddedCount(16 << 20) == 17 << 20)
    }

    @Test func paddingRoundTripsAndRejectsWhatIsNotPadded() {
        for length in [0, 1, 62, 63, 64, 1000, 3000] {
            let plaintext = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
            let padded = Padding.padded(plaintext)
            #expect(padded.count == Padding.paddedCount(length))
            #expect(Padding.unpaddedCount(padded) == length)
        }
        // A plaintext ending in zeros keeps them: the marker byte comes after it.
        #expect(Padding.unpaddedCount(Padding.padded([1, 0, 0])) == 3)
        #expect(Padding.unpaddedCount([]) == nil)
        #expect(Padding.unpaddedCount([0, 0, 0]) == nil)
        #expect(Padding.unpaddedCount([1, 2, 0]) == nil)
    }

    @Test func theMarkerIsFoundAtEveryOffsetFromTheWordsScannedAtOnce() {
        for count in 1...40 {
            #expect(Padding.unpaddedCount([UInt8](repeating: 0, count: count)) == nil)
            for marker in 0..<count {
                var bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 + 1) }
                bytes[marker] = 0x80
                for i in (marker + 1)..<count { bytes[i] = 0 }
                #expect(Padding.unpaddedCount(bytes) == marker, "marker at \(marker) of \(count)")
                bytes[marker] = 0x7f
                #expect(Padding.unpaddedCount(bytes) == nil, "no marker, \(count) bytes")
            }
        }
    }

    @Test func aMixedSubkeyNeedsBothKeys() throws {
        let a = try SymmetricKey.random()
        let b = try SymmetricKey.random()
        let c = try SymmetricKey.random()
        let domain = KeyDerivation.Domain("test.mix")
        let ab = try KeyDerivation.subkey(of: a, domain: domain, context: [1], mixing: b)
        #expect(ab == (try KeyDerivation.subkey(of: a, domain: domain, context: [1], mixing: b)))
        #expect(ab != (try KeyDerivation.subkey(of: a, domain: domain, context: [1], mixing: c)))
        #expect(ab != (try KeyDerivation.subkey(of: c, domain: domain, context: [1], mixing: b)))
        #expect(ab != (try KeyDerivation.subkey(of: a, domain: domain, context: [2], mixing: b)))
        #expect(ab != (try KeyDerivation.subkey(of: a, domain: domain, context: [1])))
    }
}
