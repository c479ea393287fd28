import FoundationEssentials

/// The checks the fuzz targets and the regression replay run on one input (package-internal test support).
package enum ArchiveFuzzOracle {
    /// Decodes `bytes` as the raw item and as each schema type, ignoring errors: it must never trap or hang.
    /// `VaultArchive.decode` is a scan of the bytes, which does not depend on the type, and a decode of
    /// the scanned item: one scan serves every type, exactly as thirteen decodes would, at a thirteenth of
    /// the scanning (the decode target ran 600 inputs a second under AddressSanitizer this way before).
    package static func decodeOnly(_ bytes: [UInt8]) {
        guard let item = try? VaultArchive.scan(bytes) else { return }
        _ = try? VaultArchive.decode(FuzzRecord.self, fromScanned: item)
        _ = try? VaultArchive.decode(FuzzNode.self, fromScanned: item)
        _ = try? VaultArchive.decode(FuzzWrapper.self, fromScanned: item)
        _ = try? VaultArchive.decode(FuzzSpellings.self, fromScanned: item)
        _ = try? VaultArchive.decode([String: String].self, fromScanned: item)
        _ = try? VaultArchive.decode(Set<String>.self, fromScanned: item)
        _ = try? VaultArchive.decode([Int: [UInt8]].self, fromScanned: item)
        _ = try? VaultArchive.decode([Date].self, fromScanned: item)
        _ = try? VaultArchive.decode([UUID: URL].self, fromScanned: item)
        _ = try? VaultArchive.decode([Float?].self, fromScanned: item)
        _ = try? VaultArchive.decode([Decimal].self, fromScanned: item)
        _ = try? VaultArchive.decode(FuzzRecord.self, fromScanned: item, options: .init(rejectsUnknownKeys: false))
    }

    /// Returns a description of the first violated round-trip property, or nil: whatever scans must be written
    /// back to the same bytes, and whatever decodes into a schema type must encode, without error, to the same
    /// bytes. As in `decodeOnly`, the one scan serves every type's decode (`decode(_:from:)` is that scan and
    /// `decode(_:fromScanned:)`), instead of nine scans more of the same bytes.
    package static func roundTrip(_ bytes: [UInt8]) -> String? {
        guard let item = try? VaultArchive.scan(bytes) else { return nil }
        if VaultArchive.write(item) != bytes {
            return "scan/write changed the bytes"
        }
        if let failure = check(FuzzRecord.self, item, bytes) { return failure }
        if let failure = check(FuzzNode.self, item, bytes) { return failure }
        if let failure = check(FuzzWrapper.self, item, bytes) { return failure }
        if let failure = check(FuzzSpellings.self, item, bytes) { return failure }
        if let failure = check([String: String].self, item, bytes) { return failure }
        if let failure = check([Int: [UInt8]].self, item, bytes) { return failure }
        if let failure = check([Date].self, item, bytes) { return failure }
        if let failure = check([UUID: URL].self, item, bytes) { return failure }
        if let failure = check([Double].self, item, bytes) { return failure }
        return nil
    }

    private static func check<T: Codable>(_ type: T.Type, _ item: CBOR, _ bytes: [UInt8]) -> String? {
        guard let value = try? VaultArchive.decode(T.self, fromScanned: item) else { return nil }
        do {
            let again = try VaultArchive.encode(value)
            return again == bytes ? nil : "decode/encode as \(T.self) changed the bytes"
        } catch {
            return "encode as \(T.self) threw \(error)"
        }
    }
}

/// A record with a field of every mapped type (fuzzing schema).
package struct FuzzRecord: Codable {
    var int: Int
    var int8: Int8
    var int16: Int16
    var int32: Int32
    var int64: Int64
    var uint: UInt
    var uint8: UInt8
    var uint16: UInt16
    var uint32: UInt32
    var uint64: UInt64
    var float: Float
    var double: Double
    var bool: Bool
    var string: String
    var data: Data
    var bytes: [UInt8]
    var date: Date
    var uuid: UUID
    var url: URL
    var list: [Int]
    var names: [String: Int]
    var numbered: [Int: String]
}

/// A recursive tree (fuzzing schema).
package struct FuzzNode: Codable {
    var name: String
    var children: [FuzzNode]
}

/// Two coding keys that Swift's `String` treats as equal but whose UTF-8 differs (fuzzing schema): "é"
/// precomposed (U+00E9) and decomposed (e, U+0301) are two keys of the map.
package struct FuzzSpellings: Codable {
    var precomposed: Int
    var decomposed: Int

    enum CodingKeys: String, CodingKey {
        case precomposed = "\u{E9}"
        case decomposed = "e\u{301}"
    }
}

/// Custom coding with nested containers and a super encoder (fuzzing schema).
package struct FuzzWrapper: Codable {
    var tag: Int
    var values: [Bool]
    var inner: FuzzNode

    enum CodingKeys: String, CodingKey {
        case tag, values, nested
    }

    enum NestedKeys: String, CodingKey {
        case tag
    }

    package init(tag: Int, values: [Bool], inner: FuzzNode) {
        self.tag = tag
        self.values = values
        self.inner = inner
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let nested = try container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        tag = try nested.decode(Int.self, forKey: .tag)
        var list = try container.nestedUnkeyedContainer(forKey: .values)
        var values: [Bool] = []
        while !list.isAtEnd { values.append(try list.decode(Bool.self)) }
        self.values = values
        inner = try FuzzNode(from: container.superDecoder())
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var nested = container.nestedContainer(keyedBy: NestedKeys.self, forKey: .nested)
        try nested.encode(tag, forKey: .tag)
        var list = container.nestedUnkeyedContainer(forKey: .values)
        for value in values { try list.encode(value) }
        try inner.encode(to: container.superEncoder())
    }
}
