import FoundationEssentials

/// Shared state of one top-level decode.
final class DecodeState {
    let userInfo: [CodingUserInfoKey: Any]
    let rejectsUnknownKeys: Bool
    /// Decoders whose containers were opened in the current scopes; checked for unread entries when the
    /// `init(from:)` that owns a scope returns.
    var opened: [ArchiveDecoder] = []

    init(userInfo: [CodingUserInfoKey: Any], rejectsUnknownKeys: Bool) {
        self.userInfo = userInfo
        self.rejectsUnknownKeys = rejectsUnknownKeys
    }

    /// Runs `T.init(from:)` and then, if it succeeded, requires every map entry and array element that it
    /// (or the containers it opened) did not read to be absent.
    @inline(__always)
    func decode<T: Decodable>(_ type: T.Type, with decoder: ArchiveDecoder) throws -> T {
        guard rejectsUnknownKeys else { return try T(from: decoder) }
        let scope = opened.count
        defer { opened.removeSubrange(scope...) }
        let value = try T(from: decoder)
        if opened.count > scope {
            for index in scope..<opened.count {
                try opened[index].checkFullyRead()
            }
        }
        return value
    }
}

/// The `Decoder` handed to `Decodable` types; one per CBOR item that a type decodes itself from.
final class ArchiveDecoder: Decoder {
    let value: CBOR
    let codingPath: [any CodingKey]
    let state: DecodeState
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    /// For a map: which entries were read. For an array: how many elements were read (the highest count of
    /// any unkeyed container opened on it).
    private var usedEntries: [Bool] = []
    private var elementsRead = 0
    private var registered = false

    init(value: CBOR, codingPath: [any CodingKey], state: DecodeState) {
        self.value = value
        self.codingPath = codingPath
        self.state = state
    }

    private func register() {
        guard state.rejectsUnknownKeys, !registered else { return }
        registered = true
        state.opened.append(self)
    }

    func markUsed(_ index: Int) {
        if usedEntries.isEmpty, case .map(let entries) = value {
            usedEntries = Array(repeating: false, count: entries.count)
        }
        usedEntries[index] = true
    }

    func markRead(count: Int) {
        if count > elementsRead { elementsRead = count }
    }

    /// The map entries read so far, or the array elements.
    var itemsRead: Int {
        switch value {
        case .map: usedEntries.reduce(0) { $0 + ($1 ? 1 : 0) }
        case .array: elementsRead
        default: 0
        }
    }

    func checkFullyRead() throws {
        switch value {
        case .map(let entries):
            for (index, entry) in entries.enumerated() where usedEntries.isEmpty || !usedEntries[index] {
                let key: any CodingKey
                switch entry.key {
                case .text(let s): key = ArchiveCodingKey(stringValue: s)
                case .unsigned(let u) where u <= UInt64(Int.max): key = ArchiveCodingKey(intValue: Int(u))
                case .negative(let n) where n <= UInt64(Int.max): key = ArchiveCodingKey(intValue: -1 - Int(n))
                default: key = ArchiveCodingKey(stringValue: "<\(entry.key.kindDescription) key>")
                }
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: codingPath + [key],
                        debugDescription: "unknown key \"\(key.stringValue)\": the type does not read it"
                    )
                )
            }
        case .array(let items):
            if elementsRead < items.count {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(
                        codingPath: codingPath + [ArchiveCodingKey(index: elementsRead)],
                        debugDescription: "\(items.count - elementsRead) array elements were not read by the type"
                    )
                )
            }
        default:
            break
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .map(let entries) = value else {
            throw DecodingError.typeMismatch(
                [String: Any].self,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "expected a map, found \(value.kindDescription)")
            )
        }
        register()
        return KeyedDecodingContainer(ArchiveKeyedDecodingContainer<Key>(decoder: self, entries: entries))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            throw DecodingError.typeMismatch(
                [Any].self,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "expected an array, found \(value.kindDescription)"
                )
            )
        }
        register()
        return ArchiveUnkeyedDecodingContainer(decoder: self, items: items)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueContainer(decoder: self)
    }

    // MARK: Unboxing

    /// Decodes `T` from `item`, which lives at `path`.
    @inline(__always)
    static func unbox<T: Decodable>(
        _ item: CBOR,
        as type: T.Type,
        path: @autoclosure () -> [any CodingKey],
        state: DecodeState
    ) throws -> T {
        if T.self == String.self { return try string(item, path: path()) as! T }
        if T.self == Int.self { return try integer(item, Int.self, path: path()) as! T }
        if T.self == Bool.self { return try bool(item, path: path()) as! T }
        if T.self == Double.self { return try double(item, path: path()) as! T }
        if T.self == Data.self { return Data(try bytes(item, as: Data.self, path: path())) as! T }
        if T.self == [UInt8].self { return try bytes(item, as: [UInt8].self, path: path()) as! T }
        if T.self == Date.self { return try date(item, path: path()) as! T }
        if T.self == UUID.self { return try uuid(item, path: path()) as! T }
        if T.self == URL.self { return try url(item, path: path()) as! T }
        if T.self == Float.self { return try float(item, path: path()) as! T }
        if T.self == Int64.self { return try integer(item, Int64.self, path: path()) as! T }
        if T.self == UInt64.self { return try integer(item, UInt64.self, path: path()) as! T }
        if T.self == UInt.self { return try integer(item, UInt.self, path: path()) as! T }
        if T.self == Int32.self { return try integer(item, Int32.self, path: path()) as! T }
        if T.self == UInt32.self { return try integer(item, UInt32.self, path: path()) as! T }
        if T.self == Int16.self { return try integer(item, Int16.self, path: path()) as! T }
        if T.self == UInt16.self { return try integer(item, UInt16.self, path: path()) as! T }
        if T.self == Int8.self { return try integer(item, Int8.self, path: path()) as! T }
        if T.self == UInt8.self { return try integer(item, UInt8.self, path: path()) as! T }
        // Only Dictionary and Set are hashed collections, and either is one reference whatever its
        // elements: a type of another size is not one, and is spared the cast, which for a type that
        // does not conform searches every conformance record of the executable (once per type and
        // process: in the static CLI, 137,000 instructions for each record type a `vault get` decodes).
        if mayBeHashedCollection(T.self), let collection = T.self as? any HashedCollectionDecodable.Type {
            return try collection.archiveDecode(item, path: path(), state: state) as! T
        }
        let decoder = ArchiveDecoder(value: item, codingPath: path(), state: state)
        return try state.decode(T.self, with: decoder)
    }

    static func mismatch(_ type: Any.Type, _ item: CBOR, _ expected: String, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(
            type,
            DecodingError.Context(
                codingPath: path, debugDescription: "expected \(expected), found \(item.kindDescription)")
        )
    }

    static func corrupted(_ path: [any CodingKey], _ message: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: message))
    }

    static func string(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .text(let s) = item else { throw mismatch(String.self, item, "a text string", path()) }
        return s
    }

    static func bool(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = item else { throw mismatch(Bool.self, item, "a boolean", path()) }
        return b
    }

    static func integer<T: FixedWidthInteger>(_ item: CBOR, _ type: T.Type, path: @autoclosure () -> [any CodingKey])
        throws -> T
    {
        switch item {
        case .unsigned(let u):
            guard let v = T(exactly: u) else {
                throw corrupted(path(), "the integer \(u) does not fit in \(T.self)")
            }
            return v
        case .negative(let n):
            guard T.isSigned, let m = T(exactly: n) else {
                throw corrupted(path(), "the integer -1-\(n) does not fit in \(T.self)")
            }
            return -1 - m
        default:
            throw mismatch(T.self, item, "an integer", path())
        }
    }

    static func double(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> Double {
        guard case .float(let d) = item else { throw mismatch(Double.self, item, "a float", path()) }
        return d
    }

    static func float(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> Float {
        guard case .float(let d) = item else { throw mismatch(Float.self, item, "a float", path()) }
        if d.isNaN { return .nan }
        guard let f = Float(exactly: d) else { throw corrupted(path(), "the float \(d) does not fit in Float exactly") }
        return f
    }

    static func bytes(_ item: CBOR, as type: Any.Type, path: @autoclosure () -> [any CodingKey]) throws -> [UInt8] {
        guard case .bytes(let b) = item else { throw mismatch(type, item, "a byte string", path()) }
        return b
    }

    static func tagContent(_ item: CBOR, tag: UInt64, as type: Any.Type, path: @autoclosure () -> [any CodingKey])
        throws -> CBOR
    {
        guard case .tagged(let t, let content) = item else {
            throw mismatch(type, item, "an item with tag \(tag)", path())
        }
        guard t == tag else {
            throw corrupted(path(), "unexpected tag \(t) where \(type) (tag \(tag)) was expected")
        }
        return content
    }

    static func date(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> Date {
        try dateContent(try tagContent(item, tag: CBORTag.epochDate, as: Date.self, path: path()), path: path())
    }

    /// The date that `content`, the content of tag 1, stands for.
    static func dateContent(_ content: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> Date {
        let seconds: Double
        switch content {
        case .unsigned, .negative:
            let whole = try integer(content, Int64.self, path: path())
            guard let exact = Double(exactly: whole) else {
                throw corrupted(path(), "the date \(whole) is not exactly representable")
            }
            seconds = exact
        case .float(let d):
            guard d.isFinite else { throw corrupted(path(), "a date must be finite") }
            guard Int64(exactly: d) == nil else {
                throw corrupted(path(), "non-canonical date: a whole number of seconds must be an integer")
            }
            seconds = d
        default:
            throw mismatch(Date.self, content, "an integer or a float in tag 1", path())
        }
        let date = Date(timeIntervalSince1970: seconds)
        guard date.timeIntervalSince1970 == seconds else {
            throw corrupted(path(), "the date \(seconds) is not exactly representable by Date")
        }
        return date
    }

    static func uuid(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> UUID {
        let content = try tagContent(item, tag: CBORTag.uuid, as: UUID.self, path: path())
        guard case .bytes(let b) = content else {
            throw mismatch(UUID.self, content, "a byte string in tag 37", path())
        }
        guard b.count == 16 else { throw corrupted(path(), "a UUID must have 16 bytes, not \(b.count)") }
        return UUID(
            uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
        )
    }

    static func url(_ item: CBOR, path: @autoclosure () -> [any CodingKey]) throws -> URL {
        let content = try tagContent(item, tag: CBORTag.uri, as: URL.self, path: path())
        guard case .text(let s) = content else { throw mismatch(URL.self, content, "a text string in tag 32", path()) }
        // Bytes, not `String ==`: the archive must hold exactly the text the encoder writes back.
        guard let url = URL(string: s), UTF8Text.equal(url.absoluteString, s) else {
            throw corrupted(path(), "invalid or non-canonical URL")
        }
        return url
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ArchiveDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool {
        if case .null = decoder.value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool { try ArchiveDecoder.bool(decoder.value, path: codingPath) }
    func decode(_ type: String.Type) throws -> String { try ArchiveDecoder.string(decoder.value, path: codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try ArchiveDecoder.double(decoder.value, path: codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try ArchiveDecoder.float(decoder.value, path: codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try ArchiveDecoder.integer(decoder.value, type, path: codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try ArchiveDecoder.integer(decoder.value, type, path: codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: Int32.Type) throws -> Int32 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: Int64.Type) throws -> Int64 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: UInt.Type) throws -> UInt { try ArchiveDecoder.integer(decoder.value, type, path: codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: UInt16.Type) throws -> UInt16 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: UInt32.Type) throws -> UInt32 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }
    func decode(_ type: UInt64.Type) throws -> UInt64 {
        try ArchiveDecoder.integer(decoder.value, type, path: codingPath)
    }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ArchiveDecoder.unbox(decoder.value, as: T.self, path: codingPath, state: decoder.state)
    }
}
