import Foundation
import Testing

@testable import VaultArchive

private func roundTrip<T: Codable & Equatable>(
    _ value: T,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> [UInt8] {
    let bytes = try VaultArchive.encode(value)
    let back = try VaultArchive.decode(T.self, from: bytes)
    #expect(back == value, sourceLocation: sourceLocation)
    #expect(try VaultArchive.encode(back) == bytes, "encode(decode(x)) == x", sourceLocation: sourceLocation)
    let data = try VaultArchive.encodeData(value)
    #expect([UInt8](data) == bytes, sourceLocation: sourceLocation)
    #expect(try VaultArchive.decode(T.self, from: data) == value, sourceLocation: sourceLocation)
    return bytes
}

/// The item after the 5-byte envelope, in hex.
private func itemHex(_ bytes: [UInt8]) -> String {
    #expect(Array(bytes.prefix(5)) == [0xD9, 0xD9, 0xF7, 0x82, 0x01])
    return hex(Array(bytes.dropFirst(5)))
}

@Suite struct RoundTripTests {
    @Test func envelope() throws {
        #expect(try VaultArchive.encode(0) == [0xD9, 0xD9, 0xF7, 0x82, 0x01, 0x00])
        #expect(VaultArchive.formatVersion == 1)
    }

    @Test func integersOfEveryWidth() throws {
        #expect(itemHex(try roundTrip(Int.max)) == "1b7fffffffffffffff")
        #expect(itemHex(try roundTrip(Int.min)) == "3b7fffffffffffffff")
        #expect(itemHex(try roundTrip(Int8.min)) == "387f")
        #expect(itemHex(try roundTrip(Int8.max)) == "187f")
        #expect(itemHex(try roundTrip(Int16.min)) == "397fff")
        #expect(itemHex(try roundTrip(Int32.min)) == "3a7fffffff")
        #expect(itemHex(try roundTrip(Int64.min)) == "3b7fffffffffffffff")
        #expect(itemHex(try roundTrip(UInt8.max)) == "18ff")
        #expect(itemHex(try roundTrip(UInt16.max)) == "19ffff")
        #expect(itemHex(try roundTrip(UInt32.max)) == "1affffffff")
        #expect(itemHex(try roundTrip(UInt64.max)) == "1bffffffffffffffff")
        #expect(itemHex(try roundTrip(UInt.max)) == "1bffffffffffffffff")
        for value in [0, 1, 23, 24, 255, 256, 65_535, 65_536, -1, -24, -25, -256, -257] {
            _ = try roundTrip(value)
        }
        _ = try roundTrip([Int8.min, 0, Int8.max])
        _ = try roundTrip([Int16.min, Int16.max])
        _ = try roundTrip([Int32.min, Int32.max])
        _ = try roundTrip([Int64.min, Int64.max])
        _ = try roundTrip([UInt8.min, UInt8.max])
        _ = try roundTrip([UInt16.max])
        _ = try roundTrip([UInt32.max])
        _ = try roundTrip([UInt64.max])
        _ = try roundTrip([UInt.max])
    }

    @Test func boolAndNil() throws {
        #expect(itemHex(try roundTrip(true)) == "f5")
        #expect(itemHex(try roundTrip(false)) == "f4")
        #expect(itemHex(try roundTrip(Int?.none)) == "f6")
        #expect(itemHex(try roundTrip([1, nil, 3] as [Int?])) == "8301f603")
        // Like JSON, nested optionals are ambiguous: .some(nil) is written as null and read back as nil.
        #expect(itemHex(try VaultArchive.encode(String??.some(nil))) == "f6")
    }

    @Test func floatsUseTheShortestExactWidth() throws {
        #expect(itemHex(try roundTrip(1.5)) == "f93e00")
        #expect(itemHex(try roundTrip(Float(1.5))) == "f93e00")
        #expect(itemHex(try roundTrip(100_000.0)) == "fa47c35000")
        #expect(itemHex(try roundTrip(1.1)) == "fb3ff199999999999a")
        #expect(itemHex(try roundTrip(Float(1.1))) == "fa3f8ccccd")
        #expect(itemHex(try roundTrip(-0.0)) == "f98000")
        #expect(itemHex(try roundTrip(Double.infinity)) == "f97c00")
        #expect(itemHex(try roundTrip(-Float.infinity)) == "f9fc00")
        #expect(itemHex(try roundTrip(5.960464477539063e-8)) == "f90001")
        #expect(itemHex(try roundTrip(Float.greatestFiniteMagnitude)) == "fa7f7fffff")
        #expect(itemHex(try roundTrip(Double.greatestFiniteMagnitude)) == "fb7fefffffffffffff")
        #expect(itemHex(try roundTrip(Double.leastNonzeroMagnitude)) == "fb0000000000000001")
        // Every NaN (any payload, either sign) is written as the canonical f9 7e 00.
        for nan in [Double.nan, -Double.nan, Double(nan: 5, signaling: false), Double.signalingNaN] {
            let bytes = try VaultArchive.encode(nan)
            #expect(itemHex(bytes) == "f97e00")
            #expect(try VaultArchive.decode(Double.self, from: bytes).isNaN)
        }
        #expect(try VaultArchive.decode(Float.self, from: VaultArchive.encode(Float.nan)).isNaN)
        #expect(try roundTrip([0.1, 0.25, -2.5, 1e-300]).count > 0)
    }

    @Test func strings() throws {
        #expect(itemHex(try roundTrip("")) == "60")
        #expect(itemHex(try roundTrip("IETF")) == "6449455446")
        #expect(itemHex(try roundTrip("\u{10151}")) == "64f0908591")
        _ = try roundTrip(String(repeating: "ü", count: 70_000))
        _ = try roundTrip("nul \u{0} inside")
        // A string is written as its exact scalars: no Unicode normalization (e-acute vs e + combining accent).
        #expect(itemHex(try roundTrip("\u{E9}")) != itemHex(try roundTrip("e\u{301}")))
    }

    @Test func dataAndByteArraysAreByteStrings() throws {
        #expect(itemHex(try roundTrip(Data())) == "40")
        #expect(itemHex(try roundTrip(Data([1, 2, 3, 4]))) == "4401020304")
        #expect(itemHex(try roundTrip([UInt8]([1, 2, 3, 4]))) == "4401020304")
        _ = try roundTrip(Data(repeating: 0xAB, count: 100_000))
        // Bytes written as an array of integers are not the canonical form of [UInt8].
        expectRejected([UInt8].self, archive("8101"), "expected a byte string")
    }

    @Test func dateUUIDURL() throws {
        #expect(itemHex(try roundTrip(Date(timeIntervalSince1970: 1_363_896_240))) == "c11a514b67b0")
        #expect(itemHex(try roundTrip(Date(timeIntervalSince1970: 1_363_896_240.5))) == "c1fb41d452d9ec200000")
        #expect(itemHex(try roundTrip(Date(timeIntervalSince1970: -1))) == "c120")
        _ = try roundTrip(Date(timeIntervalSince1970: 0.1))
        let uuid = UUID(uuidString: "9D820D3A-4429-4918-97F7-A69588B388A4")!
        #expect(itemHex(try roundTrip(uuid)) == "d825509d820d3a4429491897f7a69588b388a4")
        #expect(itemHex(try roundTrip(URL(string: "http://www.example.com")!)).hasPrefix("d82076"))
        _ = try roundTrip(URL(string: "file:///var/lib/vault?x=1#frag")!)
        // Date(timeIntervalSinceReferenceDate:) values reach 1970-based seconds through one rounding, so the
        // re-decoded date may differ by an ulp; its archive is still stable.
        let now = Date()
        let bytes = try VaultArchive.encode(now)
        let back = try VaultArchive.decode(Date.self, from: bytes)
        #expect(abs(back.timeIntervalSince(now)) < 1e-6)
        #expect(try VaultArchive.encode(back) == bytes)
        #expect(throws: EncodingError.self) { try VaultArchive.encode(Date(timeIntervalSince1970: .infinity)) }
    }

    @Test func arraysAndDictionaries() throws {
        #expect(itemHex(try roundTrip([1, 2, 3])) == "83010203")
        #expect(itemHex(try roundTrip([[Int]]())) == "80")
        #expect(itemHex(try roundTrip(["b": 1, "a": 2, "aa": 3])) == "a3" + "616102" + "616201" + "62616103")
        #expect(itemHex(try roundTrip([1: "a", -5: "b", 300: "c"])) == "a3" + "016161" + "19012c6163" + "246162")
        #expect(itemHex(try roundTrip([String: Int]())) == "a0")
        // A numeric-looking String key stays a text key.
        #expect(itemHex(try roundTrip(["5": true])) == "a16135f5")
        // Other key types use Swift's own representation: an array of alternating keys and values.
        _ = try roundTrip([UUID(): "x"])
        _ = try roundTrip([Int8(1): "x"])
        // Equal dictionaries give equal bytes whatever their insertion order and hash seed.
        var a: [String: Int] = [:]
        var b: [String: Int] = [:]
        for i in 0..<200 { a["k\(i)"] = i }
        for i in (0..<200).reversed() { b["k\(i)"] = i }
        #expect(try VaultArchive.encode(a) == VaultArchive.encode(b))
        _ = try roundTrip([["x": [1: [Data([1])]]]])
    }

    @Test func structsAndEnums() throws {
        let credentials = Credentials(
            username: "alice",
            password: "s3cret",
            created: Date(timeIntervalSince1970: 1_700_000_000.5),
            tags: ["a", "b"]
        )
        #expect(
            itemHex(try roundTrip(credentials))
                == "a4" + "647461677382616161" + "62" + "67637265617465" + "64c1fb41d954fc40200000"
                + "6870617373776f7264" + "66733363726574" + "68757365726e616d65" + "65616c696365"
        )
        _ = try roundTrip(Shape.circle(radius: 2))
        _ = try roundTrip(Shape.polygon([1, 2], closed: true))
        _ = try roundTrip(Shape.empty)
        _ = try roundTrip([Shape.empty, .circle(radius: 0.5)])
        _ = try roundTrip(Kind.b)
        _ = try roundTrip(Wrapper(inner: 5))
        _ = try roundTrip(Empty())
        _ = try roundTrip(Tree(value: 1, children: [Tree(value: 2, children: []), Tree(value: 3, children: [])]))
    }

    @Test func optionalFields() throws {
        let full = WithOptionals(a: 1, b: "x")
        let none = WithOptionals(a: nil, b: nil)
        _ = try roundTrip(full)
        #expect(itemHex(try roundTrip(none)) == "a0")
        // An explicit null for an optional field is accepted (as JSONDecoder does); it is the one non-canonical
        // input that decodes (re-encoding omits the key).
        #expect(try VaultArchive.decode(WithOptionals.self, from: archive("a16161f6")) == none)
    }

    @Test func classesWithSuperEncoder() throws {
        let value = Derived(base: 1, extra: "two")
        let bytes = try VaultArchive.encode(value)
        #expect(itemHex(bytes) == "a2" + "6565787472616374776f" + "657375706572" + "a1646261736501")
        let back = try VaultArchive.decode(Derived.self, from: bytes)
        #expect(back.base == 1 && back.extra == "two")
        #expect(try VaultArchive.encode(back) == bytes)
    }

    @Test func nestedContainersAndSuperEncoders() throws {
        let value = FuzzWrapper(tag: 7, values: [true, false], inner: FuzzNode(name: "n", children: []))
        let bytes = try VaultArchive.encode(value)
        let back = try VaultArchive.decode(FuzzWrapper.self, from: bytes)
        #expect(try VaultArchive.encode(back) == bytes)
        #expect(ArchiveFuzzOracle.roundTrip(bytes) == nil)
    }

    @Test func decimalUsesItsOwnCodableRepresentation() throws {
        _ = try roundTrip(Decimal(string: "12345.6789")!)
        _ = try roundTrip(Decimal(-1))
    }

    @Test func userInfoReachesTheCodableTypes() throws {
        let key = CodingUserInfoKey(rawValue: "scale")!
        let bytes = try VaultArchive.encode(Scaled(value: 2), userInfo: [key: 10])
        #expect(itemHex(bytes) == "14")
        #expect(try VaultArchive.decode(Scaled.self, from: bytes, userInfo: [key: 10]).value == 2)
    }

    @Test func encoderMisuseIsAnErrorNotATrap() {
        #expect(throws: EncodingError.self) { try VaultArchive.encode(Misuse()) }
    }

    @Test func encoderLimits() throws {
        var deep = Tree(value: 0, children: [])
        for _ in 0..<300 { deep = Tree(value: 0, children: [deep]) }
        #expect(throws: EncodingError.self) { try VaultArchive.encode(deep) }
        _ = try VaultArchive.encode(deep, options: .init(maxDepth: 1000))
        #expect(throws: EncodingError.self) {
            try VaultArchive.encode(Data(count: 100), options: .init(maxSize: 50))
        }
    }
}

// MARK: - Types

enum Shape: Codable, Equatable {
    case circle(radius: Double)
    case polygon([Int], closed: Bool)
    case empty
}

enum Kind: String, Codable {
    case a, b
}

struct Wrapper: Codable, Equatable {
    var inner: Int
    init(inner: Int) { self.inner = inner }
    init(from decoder: any Decoder) throws { inner = try decoder.singleValueContainer().decode(Int.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(inner)
    }
}

struct Empty: Codable, Equatable {}

struct Tree: Codable, Equatable {
    var value: Int
    var children: [Tree]
}

struct WithOptionals: Codable, Equatable {
    var a: Int?
    var b: String?
}

class Base: Codable {
    var base: Int
    init(base: Int) { self.base = base }
}

final class Derived: Base {
    var extra: String
    enum CodingKeys: String, CodingKey { case extra }

    init(base: Int, extra: String) {
        self.extra = extra
        super.init(base: base)
    }

    required init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        extra = try container.decode(String.self, forKey: .extra)
        try super.init(from: container.superDecoder())
    }

    override func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(extra, forKey: .extra)
        try super.encode(to: container.superEncoder())
    }
}

struct Scaled: Codable {
    var value: Int
    init(value: Int) { self.value = value }
    static let key = CodingUserInfoKey(rawValue: "scale")!
    init(from decoder: any Decoder) throws {
        let scale = decoder.userInfo[Self.key] as? Int ?? 1
        value = try decoder.singleValueContainer().decode(Int.self) / scale
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value * (encoder.userInfo[Self.key] as? Int ?? 1))
    }
}

struct Misuse: Encodable {
    func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        try single.encode(1)
        var keyed = encoder.container(keyedBy: ArchiveCodingKey.self)
        try keyed.encode(2, forKey: ArchiveCodingKey(stringValue: "x"))
    }
}

@Suite struct DepthLimitAgreementTests {
    /// Whatever encodes under a depth limit also decodes under it, and the limit is exact: a value nested
    /// exactly to the limit encodes and decodes, one level more fails on both sides.
    @Test(arguments: [1, 2, 3, 10, 256])
    func encoderAndDecoderAgree(limit: Int) throws {
        let options = VaultArchive.Options(maxDepth: limit)
        // n nested arrays around an empty array: n + 1 containers.
        func nested(_ n: Int) -> String { String(repeating: "81", count: n) + "80" }
        let atLimit = archive(nested(limit - 1))
        let beyond = archive(nested(limit))
        #expect(try VaultArchive.write(VaultArchive.scan(atLimit, options: options)) == atLimit)
        #expect(throws: DecodingError.self) { try VaultArchive.scan(beyond, options: options) }
        // A tagged leaf counts as a level too: a Date inside `limit - 1` arrays is `limit` levels deep.
        let date = Date(timeIntervalSince1970: 0)
        if limit == 1 {
            #expect(
                try VaultArchive.decode(Date.self, from: VaultArchive.encode(date, options: options), options: options)
                    == date)
            #expect(throws: EncodingError.self) { try VaultArchive.encode([date], options: options) }
        }
        if limit == 2 {
            _ = try VaultArchive.decode(
                [Date].self, from: VaultArchive.encode([date], options: options), options: options)
            #expect(throws: EncodingError.self) { try VaultArchive.encode([[date]], options: options) }
            #expect(throws: EncodingError.self) { try VaultArchive.encode([[Int]()], options: .init(maxDepth: 1)) }
        }
    }
}

@Suite struct DateRangeTests {
    /// Dates across the whole useful range (and extremes) archive and decode back to the same archive.
    @Test func datesOverAWideRangeRoundTrip() throws {
        var seconds: [Double] = [0, -0.5, 1e-9, 978_307_200, 978_307_200.000_001, 1e12, -1e12, 2e18, -9.3e18, 1e300]
        var x = 1.234_567_891_234e-6
        while x < 1e15 {
            seconds.append(x)
            seconds.append(-x)
            x *= 3.7
        }
        for s in seconds {
            for date in [Date(timeIntervalSince1970: s), Date(timeIntervalSinceReferenceDate: s)] {
                let bytes = try VaultArchive.encode(date)
                let back = try VaultArchive.decode(Date.self, from: bytes)
                #expect(try VaultArchive.encode(back) == bytes, "\(s)")
            }
        }
    }
}
