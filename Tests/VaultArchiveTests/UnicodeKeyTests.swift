import Foundation
import Testing

@testable import VaultArchive

// Swift's `String ==` and hashing use Unicode canonical equivalence; CBOR compares map keys as data items
// (RFC 8949 §5.6.1), so two spellings of "é" are two keys. Every literal is written with escapes so that no
// editor can normalize it.

/// Coding keys that differ in length: "é" precomposed (U+00E9, c3 a9) and decomposed (e, U+0301: 65 cc 81).
private struct TwoSpellings: Codable, Equatable {
    var precomposed: Int
    var decomposed: Int

    enum CodingKeys: String, CodingKey {
        case precomposed = "\u{E9}"
        case decomposed = "e\u{301}"
    }
}

/// Coding keys of the same UTF-8 length that Swift's `String` treats as equal: U+1E0B U+0323 (e1 b8 8b cc a3)
/// and U+1E0D U+0307 (e1 b8 8d cc 87), both "d with dot below and dot above".
private struct SameLengthSpellings: Codable, Equatable {
    var dotAboveFirst: Int
    var dotBelowFirst: Int

    enum CodingKeys: String, CodingKey {
        case dotAboveFirst = "\u{1E0B}\u{323}"
        case dotBelowFirst = "\u{1E0D}\u{307}"
    }
}

/// The same keys, read through `contains` (synthesized `decodeIfPresent`).
private struct OptionalSpellings: Codable, Equatable {
    var dotAboveFirst: Int?
    var dotBelowFirst: Int?

    enum CodingKeys: String, CodingKey {
        case dotAboveFirst = "\u{1E0B}\u{323}"
        case dotBelowFirst = "\u{1E0D}\u{307}"
    }
}

/// Records what `contains` and `decodeNil(forKey:)` say about each spelling, then reads the one present.
private struct LookupProbe: Decodable {
    var contains: [Bool]
    var nilLookupFound: Bool

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: SameLengthSpellings.CodingKeys.self)
        contains = [container.contains(.dotAboveFirst), container.contains(.dotBelowFirst)]
        nilLookupFound = (try? container.decodeNil(forKey: .dotAboveFirst)) != nil
        _ = try container.decode(Int.self, forKey: .dotBelowFirst)
    }
}

/// An enum's synthesized decoding reads `allKeys`; its keys' `init(stringValue:)` matches canonically (it
/// returns `.precomposed` for both spellings), so the decoder finds the exact case through `CaseIterable`.
private enum Spelling: Codable, Equatable {
    case precomposed(Int)
    case decomposed(Int)

    enum CodingKeys: String, CodingKey, CaseIterable {
        case precomposed = "\u{E9}"
        case decomposed = "e\u{301}"
    }
}

private struct Holder: Codable, Equatable {
    var names: [String: Int]
}

/// The map {"\u{E9}" (c3 a9): 1, "e\u{301}" (65 cc 81): 2}, keys sorted bytewise by their encodings (62 < 63).
private let bothSpellingsMap = "a2" + "62c3a9" + "01" + "6365cc81" + "02"

/// Text as bytes, for comparisons that `String ==` would make canonically.
private func utf8(_ text: String) -> [UInt8] { Array(text.utf8) }

@Suite struct UnicodeKeyTests {
    @Test func structWithBothSpellingsKeepsBothFields() throws {
        #expect("\u{E9}" == "e\u{301}", "the premise: Swift's String treats the two keys as equal")
        let value = TwoSpellings(precomposed: 1, decomposed: 2)
        let bytes = try VaultArchive.encode(value)
        #expect(hex(bytes) == "d9d9f78201" + bothSpellingsMap)
        let back = try VaultArchive.decode(TwoSpellings.self, from: bytes)
        #expect(back == value)
        #expect(try VaultArchive.encode(back) == bytes)
    }

    @Test func structWithSameLengthSpellingsKeepsBothFields() throws {
        #expect("\u{1E0B}\u{323}" == "\u{1E0D}\u{307}", "the premise: Swift's String treats the two keys as equal")
        let value = SameLengthSpellings(dotAboveFirst: 1, dotBelowFirst: 2)
        let item = "a2" + "65e1b88bcca3" + "01" + "65e1b88dcc87" + "02"
        let bytes = try VaultArchive.encode(value)
        #expect(hex(bytes) == "d9d9f78201" + item)
        // Decoding the hand-built bytes looks each key up by its own bytes.
        let back = try VaultArchive.decode(SameLengthSpellings.self, from: archive(item))
        #expect(back == value)
        #expect(try VaultArchive.encode(back) == bytes)
    }

    @Test func mapWithBothSpellingsDecodesIntoTheStruct() throws {
        let input = archive(bothSpellingsMap)
        let value = try VaultArchive.decode(TwoSpellings.self, from: input)
        #expect(value == TwoSpellings(precomposed: 1, decomposed: 2))
        #expect(try VaultArchive.encode(value) == input, "encode(decode(x)) == x")
    }

    @Test func lookupsMatchBytesNotCanonicalEquivalence() throws {
        // Only the second spelling is present.
        let input = archive("a1" + "65e1b88dcc87" + "07")
        let value = try VaultArchive.decode(OptionalSpellings.self, from: input)
        #expect(value == OptionalSpellings(dotAboveFirst: nil, dotBelowFirst: 7))
        #expect(try VaultArchive.encode(value) == input)
        let probe = try VaultArchive.decode(LookupProbe.self, from: input)
        #expect(probe.contains == [false, true])
        #expect(!probe.nilLookupFound, "decodeNil(forKey:) of the absent spelling must throw keyNotFound")
    }

    @Test func allKeysNamesTheExactCase() throws {
        // .decomposed(5): {"e\u{301}": {"_0": 5}}.
        let input = archive("a1" + "6365cc81" + "a1625f3005")
        let value = try VaultArchive.decode(Spelling.self, from: input)
        #expect(value == .decomposed(5))
        #expect(try VaultArchive.encode(value) == input)
        // .precomposed(4): {"\u{E9}": {"_0": 4}}.
        let other = archive("a1" + "62c3a9" + "a1625f3004")
        #expect(try VaultArchive.encode(Spelling.precomposed(4)) == other)
        #expect(try VaultArchive.decode(Spelling.self, from: other) == .precomposed(4))
    }

    @Test func stringDictionaryRefusesKeysThatWouldMerge() throws {
        let input = archive(bothSpellingsMap)
        let message = "two keys that Swift's String treats as equal"
        let path = expectRejected([String: Int].self, input, message)
        #expect(utf8(pathText(path)) == utf8("e\u{301}"))
        expectRejected([String: Int].self, input, message, options: .init(rejectsUnknownKeys: false))
        // The coding path leads to the map and the key that would overwrite the other.
        let nested = archive("a1" + "656e616d6573" + bothSpellingsMap)
        let nestedPath = expectRejected(Holder.self, nested, message)
        #expect(nestedPath.map { utf8($0.stringValue) } == [utf8("names"), utf8("e\u{301}")])
        // Keys of one spelling each still decode, and a lenient decode skipping an integer key is no collision.
        let single = archive("a1" + "6365cc81" + "02")
        let decoded = try VaultArchive.decode([String: Int].self, from: single)
        #expect(decoded.keys.map(utf8) == [utf8("e\u{301}")] && decoded.values.first == 2)
        #expect(try VaultArchive.encode(VaultArchive.decode([String: Int].self, from: single)) == single)
        let mixed = archive("a2" + "0102" + "616103")
        #expect(
            try VaultArchive.decode([String: Int].self, from: mixed, options: .init(rejectsUnknownKeys: false))
                == ["a": 3])
    }

    @Test func setRefusesElementsThatWouldMerge() throws {
        let input = archive("82" + "62c3a9" + "6365cc81")
        let path = expectRejected(Set<String>.self, input, "two values that Swift's String treats as equal")
        #expect(pathText(path) == "Index 1")
        // As an array, both spellings round-trip.
        let array = try VaultArchive.decode([String].self, from: input)
        #expect(array.map(utf8) == [[0xC3, 0xA9], [0x65, 0xCC, 0x81]])
        #expect(try VaultArchive.encode(array) == input)
        expectRejected(Set<Int>.self, archive("820101"), "equal as Int")
    }

    @Test func dictionaryWrittenAsPairsRefusesEqualKeys() throws {
        // [UUID: Int] is an array of alternating keys and values; the scanner's duplicate-key rule does not
        // apply to arrays, so the same UUID twice would keep only the second value.
        let uuid = "d825509d820d3a4429491897f7a69588b388a4"
        let input = archive("84" + uuid + "01" + uuid + "02")
        let path = expectRejected([UUID: Int].self, input, "equal as UUID")
        #expect(pathText(path) == "Index 2")
    }
}
