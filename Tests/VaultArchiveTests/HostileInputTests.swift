import Foundation
import Testing

@testable import VaultArchive

/// Each hostile-input rule: the decoder throws a DecodingError (with a coding path), never traps, hangs or
/// allocates more than the input justifies.
@Suite struct HostileInputTests {
    @Test func notAnArchive() {
        expectRejected(Int.self, [], "missing the self-describe tag")
        expectRejected(Int.self, bytes(hex: "00"), "missing the self-describe tag")
        expectRejected(Int.self, bytes(hex: "d9d9f7"), "expected an array of two items")
        expectRejected(Int.self, bytes(hex: "d9d9f78102"), "expected an array of two items")
        expectRejected(Int.self, bytes(hex: "d9d9f78202a0"), "unsupported archive version 2")
        expectRejected(Int.self, bytes(hex: "d9d9f782616100"), "the version is a text string")
        expectRejected(Int.self, bytes(hex: "d9d9f78201"), "unexpected end of input")
        // JSON, a binary plist and an NSKeyedArchiver archive are told apart at once.
        expectRejected(Int.self, Array("{\"a\":1}".utf8), "missing the self-describe tag")
        expectRejected(Int.self, Array("bplist00".utf8), "missing the self-describe tag")
    }

    @Test func lengthsAndCountsAreCheckedBeforeAllocating() {
        // Byte string, text string, array and map heads that claim more than the bytes left.
        expectRejected(Data.self, archive("5bffffffffffffffff"), "longer than the 0 bytes left")
        expectRejected(Data.self, archive("5a7fffffff00"), "longer than the 1 bytes left")
        expectRejected(String.self, archive("7bffffffffffffffff"), "longer than the 0 bytes left")
        expectRejected([Int].self, archive("9bffffffffffffffff"), "cannot fit in the 0 bytes left")
        expectRejected([Int].self, archive("9a0001000000"), "cannot fit")
        expectRejected([String: Int].self, archive("bbffffffffffffffff"), "cannot fit")
        // A map needs two bytes per entry at least.
        expectRejected([Int: Int].self, archive("a30102030405"), "cannot fit in the 5 bytes left")
        // A count that fits the bytes left but whose items run out.
        expectRejected([Int].self, archive("83011818"), "unexpected end of input")
        expectRejected([Int].self, archive("830102"), "array of 3 items cannot fit in the 2 bytes left")
        expectRejected(Int.self, archive("1b0000"), "unexpected end of input in a head")
        expectRejected(Double.self, archive("fb3ff1"), "unexpected end of input in a double float")
        expectRejected(Float.self, archive("fa3f"), "unexpected end of input in a single float")
        expectRejected(Double.self, archive("f93e"), "unexpected end of input in a half float")
    }

    @Test func hugeClaimsFailFast() {
        // 4 MiB of array heads each claiming 2^64-1 elements: rejected on the first head, in microseconds.
        let input = archive(String(repeating: "9bffffffffffffffff", count: 1000))
        let clock = ContinuousClock()
        let elapsed = clock.measure { expectRejected([[Int]].self, input, "cannot fit") }
        #expect(elapsed < .seconds(1))
    }

    @Test func nestingDepthIsLimited() throws {
        let deep256 = archive(String(repeating: "81", count: 256) + "00")
        let deep257 = archive(String(repeating: "81", count: 257) + "00")
        #expect(try VaultArchive.write(VaultArchive.scan(deep256)) == deep256)
        expectRejected(Int.self, deep257, "nesting deeper than the limit of 256")
        expectRejected(Int.self, archive(String(repeating: "a16161", count: 300) + "00"), "nesting deeper")
        expectRejected(Int.self, archive(String(repeating: "c1", count: 300) + "00"), "nesting deeper")
        // Configurable.
        let options = VaultArchive.Options(maxDepth: 3)
        expectRejected([[[[Int]]]].self, archive("8181818100"), "limit of 3", options: options)
        #expect(try VaultArchive.decode([[[Int]]].self, from: archive("818181" + "00"), options: options) == [[[0]]])
        // Deep but legal input for a recursive type decodes without exhausting the stack.
        var text = "00"
        for _ in 0..<255 { text = "81" + text }
        _ = try VaultArchive.scan(archive(text))
        // The limit is clamped to 1024, so a huge configured limit cannot overflow the stack; the scanner itself
        // does not recurse.
        let huge = VaultArchive.Options(maxDepth: Int.max)
        expectRejected(Int.self, archive(String(repeating: "81", count: 5000) + "00"), "limit of 1024", options: huge)
    }

    @Test func totalSizeIsLimited() throws {
        let big = try VaultArchive.encode(Data(count: 1000))
        let options = VaultArchive.Options(maxSize: 999)
        expectRejected(Data.self, big, "exceeds the size limit of 999 bytes", options: options)
        #expect(throws: DecodingError.self) { try VaultArchive.decode(Data.self, from: Data(big), options: options) }
        expectRejected(Data.self, [UInt8](repeating: 0, count: (4 << 20) + 1), "exceeds the size limit")
    }

    @Test func invalidUTF8() {
        expectRejected(String.self, archive("62c328"), "invalid UTF-8")  // bad continuation
        expectRejected(String.self, archive("62c080"), "invalid UTF-8")  // overlong NUL
        expectRejected(String.self, archive("63eda080"), "invalid UTF-8")  // surrogate
        expectRejected(String.self, archive("61ff"), "invalid UTF-8")
        expectRejected(String.self, archive("62e282"), "invalid UTF-8")  // truncated sequence
        expectRejected(String.self, archive("64f4908080"), "invalid UTF-8")  // beyond U+10FFFF
        let path = expectRejected([String: Int].self, archive("a162c32801"), "invalid UTF-8")
        #expect(pathText(path) == "<key 0>")
    }

    @Test func duplicateAndUnorderedMapKeys() {
        let path = expectRejected([String: Int].self, archive("a2616101616102"), "duplicate map key")
        #expect(pathText(path) == "a")
        expectRejected([Int: Int].self, archive("a201020103"), "duplicate map key")
        expectRejected([String: Int].self, archive("a2616201616101"), "not in deterministic (bytewise) order")
        // Length-first is not bytewise order when major types differ: "a" (61 61) sorts after 1000 (19 03 e8).
        expectRejected(Int.self, archive("a261610119" + "03e802"), "not in deterministic")
        // Shorter text keys first.
        expectRejected([String: Int].self, archive("a2626161016162" + "02"), "not in deterministic")
    }

    @Test func nonShortestHeads() {
        expectRejected(Int.self, archive("1817"), "non-shortest head (argument 23 written in 1 bytes)")
        expectRejected(Int.self, archive("1900ff"), "non-shortest head")
        expectRejected(Int.self, archive("1a0000ffff"), "non-shortest head")
        expectRejected(Int.self, archive("1b00000000ffffffff"), "non-shortest head")
        expectRejected(Int.self, archive("3800"), "non-shortest head")
        expectRejected(Data.self, archive("580101"), "non-shortest head")
        expectRejected(String.self, archive("78016161"), "non-shortest head")
        expectRejected([Int].self, archive("980100"), "non-shortest head")
        expectRejected([String: Int].self, archive("b800"), "non-shortest head")
        expectRejected(Date.self, archive("d80100"), "non-shortest head")
    }

    @Test func nonCanonicalFloats() {
        expectRejected(Double.self, archive("fa3fc00000"), "non-shortest float")
        expectRejected(Double.self, archive("fb3ff8000000000000"), "non-shortest float")
        expectRejected(Double.self, archive("fb4059000000000000"), "non-shortest float")
        expectRejected(Double.self, archive("f97e01"), "non-canonical NaN")
        expectRejected(Double.self, archive("f9fe00"), "non-canonical NaN")
        expectRejected(Double.self, archive("fa7fc00000"), "non-canonical NaN")
        expectRejected(Double.self, archive("fb7ff8000000000001"), "non-canonical NaN")
        // A double that Float cannot hold exactly is not silently rounded.
        expectRejected(Float.self, archive("fb3ff199999999999a"), "does not fit in Float exactly")
    }

    @Test func indefiniteLengths() {
        for head in ["5f", "7f", "9f", "bf"] {
            expectRejected(Int.self, archive(head + "ff"), "indefinite length items are not allowed")
        }
        expectRejected(Int.self, archive("1f"), "indefinite length")
        expectRejected(Int.self, archive("ff"), "unexpected break")
    }

    @Test func trailingBytes() {
        expectRejected(Int.self, archive("0000"), "1 trailing bytes after the archive at byte offset 6")
        expectRejected(Int.self, archive("00d9d9f78201"), "trailing bytes")
    }

    @Test func reservedAndUnsupportedSimpleValues() {
        expectRejected(Int?.self, archive("f7"), "undefined is not supported")
        expectRejected(Int?.self, archive("f0"), "unassigned simple value 16")
        expectRejected(Int?.self, archive("e0"), "unassigned simple value 0")
        expectRejected(Int?.self, archive("f820"), "unassigned simple value 32")
        expectRejected(Int?.self, archive("f8ff"), "unassigned simple value 255")
        expectRejected(Int?.self, archive("f814"), "simple value 20 in two bytes is not well-formed")
        for info in ["fc", "fd", "fe", "1c", "3d", "5e", "7c", "9d", "be", "dc"] {
            expectRejected(Int?.self, archive(info + "00"), "reserved additional information")
        }
    }

    @Test func unknownTagsOnTypedFields() {
        expectRejected(String.self, archive("d8ff6161"), "expected a text string, found an item with tag 255")
        expectRejected(Date.self, archive("c074323031332d30332d32315432303a30343a30305a"), "unexpected tag 0")
        expectRejected(UUID.self, archive("d82050" + String(repeating: "00", count: 16)), "unexpected tag 32")
        expectRejected(URL.self, archive("d8256161"), "unexpected tag 37")
        expectRejected(Int.self, archive("c249010000000000000000"), "expected an integer, found an item with tag 2")
        expectRejected(Data.self, archive("d818456449455446"), "expected a byte string")
        // Tag content that does not match the tag's mapping.
        expectRejected(UUID.self, archive("d8254f" + String(repeating: "00", count: 15)), "16 bytes, not 15")
        expectRejected(UUID.self, archive("d8256161"), "a byte string in tag 37")
        expectRejected(URL.self, archive("d82060"), "invalid or non-canonical URL")
        expectRejected(URL.self, archive("d82063612062"), "invalid")
        expectRejected(Date.self, archive("c16161"), "an integer or a float in tag 1")
        expectRejected(Date.self, archive("c1f97c00"), "a date must be finite")
        expectRejected(Date.self, archive("c1fb41d452d9ec000000"), "a whole number of seconds must be an integer")
        expectRejected(Date.self, archive("c11b0020000000000001"), "not exactly representable")
        let path = expectRejected(
            Credentials.self,
            archive(
                "a4647461677380" + "67637265617465" + "64c000" + "6870617373776f7264" + "6170"
                    + "68757365726e616d65" + "6175"
            ), "unexpected tag 0")
        #expect(pathText(path) == "created")
    }

    @Test func integerRanges() {
        expectRejected(Int8.self, archive("18c8"), "the integer 200 does not fit in Int8")
        expectRejected(UInt8.self, archive("20"), "does not fit in UInt8")
        expectRejected(UInt64.self, archive("20"), "does not fit in UInt64")
        expectRejected(Int64.self, archive("1b8000000000000000"), "does not fit in Int64")
        expectRejected(Int.self, archive("3b8000000000000000"), "does not fit in Int")
        expectRejected(Int16.self, archive("1a00010000"), "does not fit in Int16")
        expectRejected([Int: Int].self, archive("a11b800000000000000000"), "needs Int keys")
        expectRejected([Int: Int].self, archive("a1616100"), "needs Int keys, found a text string")
        expectRejected(Double.self, archive("01"), "expected a float, found an unsigned integer")
        expectRejected(Int.self, archive("f93c00"), "expected an integer, found a float")
    }

    @Test func unknownKeysAndUnreadElements() throws {
        let path = expectRejected(
            WithOptionals.self,
            archive("a2616101617a02"),
            "unknown key \"z\": the type does not read it"
        )
        #expect(pathText(path) == "z")
        // Integer keys never name a field.
        expectRejected(WithOptionals.self, archive("a10102"), "unknown key \"1\"")
        expectRejected(FixedPair.self, archive("83010203"), "1 array elements were not read")
        // Ignoring unknown keys is an option (forward compatibility, at the price of the round trip).
        let lenient = VaultArchive.Options(rejectsUnknownKeys: false)
        #expect(try VaultArchive.decode(WithOptionals.self, from: archive("a2616101617a02"), options: lenient).a == 1)
        // A failed decode attempt of one alternative does not poison the next (scopes are unwound).
        #expect(try VaultArchive.decode(Either.self, from: archive("a1616201")) == .b(1))
    }

    @Test func typeMismatchesCarryTheCodingPath() {
        let path = expectRejected(
            [String: [Int]].self,
            archive("a2616181016162820261" + "78"),
            "expected an integer, found a text string"
        )
        #expect(pathText(path) == "b.Index 1")
        let scanPath = expectRejected([String: [String]].self, archive("a1616182616162c328"), "invalid UTF-8")
        #expect(pathText(scanPath) == "a.Index 1")
        expectRejected(Credentials.self, archive("a0"), "no value for key \"username\"")
        expectRejected(FixedPair.self, archive("8101"), "the array has no more elements")
        expectRejected(Credentials.self, archive("80"), "expected a map, found an array")
        expectRejected([Int].self, archive("a0"), "expected an array, found a map")
    }
}

/// Decimal keeps its own Codable conformance; hostile field values must not trap it.
@Suite struct DecimalHostileTests {
    struct DecimalFields: Codable {
        var length: UInt32
        var exponent: Int32
        var mantissa: [UInt16]
        var isCompact: Bool
        var isNegative: Bool
    }

    @Test func hostileDecimalFieldsDoNotTrap() throws {
        let cases: [(UInt32, Int32, [UInt16])] = [
            (100, 0, [UInt16](repeating: 1, count: 8)), (3, 1000, [1, 2, 3]), (8, -128, []), (0, 0, [1]),
            (UInt32.max, Int32.min, [UInt16](repeating: 0xFFFF, count: 20)),
        ]
        for (length, exponent, mantissa) in cases {
            let fields = DecimalFields(
                length: length,
                exponent: exponent,
                mantissa: mantissa,
                isCompact: false,
                isNegative: true
            )
            _ = try? VaultArchive.decode(Decimal.self, from: VaultArchive.encode(fields))
        }
    }
}

struct FixedPair: Codable {
    var a: Int
    var b: Int
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        a = try container.decode(Int.self)
        b = try container.decode(Int.self)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(a)
        try container.encode(b)
    }
}

enum Either: Codable, Equatable {
    case a(Int)
    case b(Int)
    enum Keys: String, CodingKey { case a, b }
    init(from decoder: any Decoder) throws {
        // Tries one shape, then the other.
        if let a = try? decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .a) {
            self = .a(a)
        } else {
            self = .b(try decoder.container(keyedBy: Keys.self).decode(Int.self, forKey: .b))
        }
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .a(let v): try container.encode(v, forKey: .a)
        case .b(let v): try container.encode(v, forKey: .b)
        }
    }
}

@Suite struct ScalingTests {
    /// Large arrays and maps scan in linear time (an append that copied the array would make this quadratic).
    @Test func largeContainersScanInLinearTime() throws {
        let count = 1 << 19
        let array = CBORWriter.envelope + [0x9A, 0x00, 0x08, 0x00, 0x00] + [UInt8](repeating: 0, count: count)
        // A map of 65536 entries {0: 0, 1: 0, ...}, keys in shortest form.
        var map = CBORWriter.envelope + [0xBA, 0x00, 0x01, 0x00, 0x00]
        var writer = CBORWriter(capacity: 1 << 19)
        for i in 0..<(1 << 16) {
            writer.writeHead(0, UInt64(i))
            writer.bytes.append(0)
        }
        map += writer.bytes
        let clock = ContinuousClock()
        let elapsed = try clock.measure {
            let decoded = try VaultArchive.decode([Int].self, from: array)
            #expect(decoded.count == count)
            let dictionary = try VaultArchive.decode([Int: Int].self, from: map)
            #expect(dictionary.count == 1 << 16)
        }
        #expect(elapsed < .seconds(5))
    }
}
