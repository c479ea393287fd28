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
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, entries: entries))
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
        return UnkeyedContainer(decoder: self, items: items)
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
        if let collection = T.self as? any HashedCollectionDecodable.Type {
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
        let content = try tagContent(item, tag: CBORTag.epochDate, as: Date.self, path: path())
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

/// Collections that Swift's own `init(from:)` fills by hashing: `Dictionary` and `Set`.
///
/// Two items of the archive that are equal in the target type would merge silently, losing a value and
/// changing the bytes on re-encoding; the scanner only rules out equal bytes among map keys, while Swift's
/// `String` also treats canonically equivalent text as equal ("é" as U+00E9 and as "e" + U+0301), and a
/// dictionary written as an array of pairs, or a set, may hold equal items. Such a collection is refused.
protocol HashedCollectionDecodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self
}

extension Dictionary: HashedCollectionDecodable where Key: Decodable, Value: Decodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self {
        if Key.self == Int.self {
            // Through `Any`: a direct `as! Self` from `[Int: Value]` would convert the dictionary element by element.
            return try intKeyed(item, path: path, state: state) as Any as! Self
        }
        let decoder = ArchiveDecoder(value: item, codingPath: path, state: state)
        let result = try state.decode(Self.self, with: decoder)
        // Swift's init(from:) reads each map entry, or each key/value pair of the array form, once and adds it.
        switch item {
        case .map(let entries) where result.count != decoder.itemsRead:
            throw mergedKeys(entries, path: path)
        case .array(let items) where result.count != decoder.itemsRead / 2:
            throw mergedPairs(items, path: path, state: state)
        default:
            return result
        }
    }

    /// `[Int: V]`, read from a CBOR map with integer keys only.
    private static func intKeyed(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> [Int: Value] {
        guard case .map(let entries) = item else {
            throw ArchiveDecoder.mismatch(Self.self, item, "a map", path)
        }
        var result: [Int: Value] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            let key: Int
            switch entry.key {
            case .unsigned(let u) where u <= UInt64(Int.max):
                key = Int(u)
            case .negative(let n) where n <= UInt64(Int.max):
                key = -1 - Int(n)
            default:
                throw ArchiveDecoder.corrupted(
                    path,
                    "a map decoded as [Int: \(Value.self)] needs Int keys, found \(entry.key.kindDescription)"
                )
            }
            // The scanner has already rejected duplicate keys, so this never overwrites.
            result[key] = try ArchiveDecoder.unbox(
                entry.value,
                as: Value.self,
                path: path + [ArchiveCodingKey(intValue: key)],
                state: state
            )
        }
        return result
    }

    /// The error for two text keys of a map that are equal as `Key` (found again by converting each key the
    /// way Swift's `init(from:)` does).
    private static func mergedKeys(_ entries: [CBORMapEntry], path: [any CodingKey]) -> DecodingError {
        let texts = entries.map { entry -> String? in
            if case .text(let s) = entry.key { return s }
            return nil
        }
        let keyType = Key.self as? any CodingKeyRepresentable.Type
        if let keyType, let (first, second) = firstEqualPair(texts.indices, { texts[$0].flatMap { key(keyType, $0) } }),
            let a = texts[first], let b = texts[second]
        {
            let why =
                Key.self == String.self
                ? "are two keys that Swift's String treats as equal (canonically equivalent, different UTF-8)"
                : "are equal as \(Key.self)"
            return ArchiveDecoder.corrupted(
                path + [ArchiveCodingKey(stringValue: b)],
                "the map keys \(UTF8Text.quoted(a)) and \(UTF8Text.quoted(b)) \(why): decoding them as \(Self.self) "
                    + "would merge two entries and lose a value"
            )
        }
        return ArchiveDecoder.corrupted(path, "map keys are equal as \(Key.self): \(Self.self) would merge entries")
    }

    private static func key<K: CodingKeyRepresentable>(_ type: K.Type, _ text: String) -> Key? {
        // Swift's own dictionary coding key: the text, and its integer value if it has one.
        var codingKey = ArchiveCodingKey(stringValue: text)
        codingKey.intValue = Int(text)
        return K(codingKey: codingKey) as? Key
    }

    /// The error for two keys of the array form (keys and values alternating) that are equal as `Key`.
    private static func mergedPairs(_ items: [CBOR], path: [any CodingKey], state: DecodeState) -> DecodingError {
        let keys = stride(from: 0, to: items.count - 1, by: 2)
        let pair = firstEqualPair(keys) { try? ArchiveDecoder.unbox(items[$0], as: Key.self, path: path, state: state) }
        guard let (first, second) = pair else {
            return ArchiveDecoder.corrupted(path, "keys are equal as \(Key.self): \(Self.self) would merge entries")
        }
        return ArchiveDecoder.corrupted(
            path + [ArchiveCodingKey(index: second)],
            "the keys at index \(first) and \(second) \(equalItems(items[first], items[second], Key.self)): "
                + "decoding them as \(Self.self) would merge two entries and lose a value"
        )
    }
}

extension Set: HashedCollectionDecodable where Element: Decodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self {
        let decoder = ArchiveDecoder(value: item, codingPath: path, state: state)
        let result = try state.decode(Self.self, with: decoder)
        // Swift's init(from:) reads each element once and inserts it.
        guard case .array(let items) = item, result.count != decoder.itemsRead else { return result }
        let pair = firstEqualPair(items.indices) {
            try? ArchiveDecoder.unbox(items[$0], as: Element.self, path: path, state: state)
        }
        guard let (first, second) = pair else {
            throw ArchiveDecoder.corrupted(path, "elements are equal as \(Element.self): \(Self.self) would merge them")
        }
        throw ArchiveDecoder.corrupted(
            path + [ArchiveCodingKey(index: second)],
            "the elements at index \(first) and \(second) \(equalItems(items[first], items[second], Element.self)): "
                + "decoding them as \(Self.self) would keep only one"
        )
    }
}

/// The first two of `indices` whose values (nil: skipped) are equal, found by hashing; for error messages only.
private func firstEqualPair<H: Hashable>(_ indices: some Sequence<Int>, _ value: (Int) -> H?) -> (Int, Int)? {
    var seen: [H: Int] = [:]
    for index in indices {
        guard let v = value(index) else { continue }
        if let earlier = seen.updateValue(index, forKey: v) { return (earlier, index) }
    }
    return nil
}

/// Why two items of a collection are one value of `type`, for an error message.
private func equalItems(_ a: CBOR, _ b: CBOR, _ type: Any.Type) -> String {
    guard case .text(let x) = a, case .text(let y) = b else { return "are equal as \(type)" }
    let texts = "(\(UTF8Text.quoted(x)) and \(UTF8Text.quoted(y)))"
    if type == String.self, !UTF8Text.equal(x, y) {
        return texts + " are two values that Swift's String treats as equal (canonically equivalent, different UTF-8)"
    }
    return texts + " are equal as \(type)"
}

// MARK: - Containers

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ArchiveDecoder
    let entries: [CBORMapEntry]
    var codingPath: [any CodingKey] { decoder.codingPath }

    var allKeys: [Key] {
        var keys: [Key] = []
        keys.reserveCapacity(entries.count)
        for entry in entries {
            // Only text keys name fields; integer keys belong to `[Int: V]`, which is decoded without this.
            if case .text(let s) = entry.key, let key = Self.key(named: s) {
                keys.append(key)
            }
        }
        return keys
    }

    /// The key whose `stringValue` is exactly the bytes of `text`, or nil. `init(stringValue:)` of a
    /// `String`-backed enum matches canonically equivalent text (its `switch` compares with `String ==`), so
    /// it may return the case of another spelling; the cases of a `CaseIterable` key type are then searched.
    private static func key(named text: String) -> Key? {
        guard let key = Key(stringValue: text) else { return nil }
        if UTF8Text.equal(key.stringValue, text) { return key }
        guard let caseIterable = Key.self as? any CaseIterable.Type else { return nil }
        return exactCase(caseIterable, text)
    }

    private static func exactCase<C: CaseIterable>(_ type: C.Type, _ text: String) -> Key? {
        for candidate in C.allCases {
            if let key = candidate as? Key, UTF8Text.equal(key.stringValue, text) { return key }
        }
        return nil
    }

    /// The index of the entry whose key is the text `wanted`, byte for byte. The scanner guarantees the entries
    /// are sorted as their encoded keys compare bytewise, so a binary search finds it in O(log n); the bytes of
    /// `wanted` are read once for the whole search.
    private func index(ofText wanted: String) -> Int? {
        let bytes = wanted.utf8.span
        var low = 0
        var high = entries.count
        while low < high {
            let mid = low + (high - low) / 2
            let c: Int
            if case .text(let s) = entries[mid].key {
                c = UTF8Text.compareEncoded(s, bytes)
            } else {
                // Text (major type 3) sorts after integers and byte strings, before arrays, maps and the rest.
                c = entries[mid].key.majorType < 3 ? -1 : 1
            }
            if c == 0 { return mid }
            if c < 0 { low = mid + 1 } else { high = mid }
        }
        return nil
    }

    private func index(of key: Key) -> Int? { index(ofText: key.stringValue) }

    private func entry(_ key: Key) throws -> CBOR {
        guard let i = index(of: key) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\"")
            )
        }
        decoder.markUsed(i)
        return entries[i].value
    }

    func contains(_ key: Key) -> Bool { index(of: key) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let i = index(of: key) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\"")
            )
        }
        guard case .null = entries[i].value else { return false }
        decoder.markUsed(i)
        return true
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let item = try entry(key)
        return try ArchiveDecoder.unbox(item, as: T.self, path: codingPath + [key], state: decoder.state)
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try ArchiveDecoder.string(try entry(key), path: codingPath + [key])
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try ArchiveDecoder.bool(try entry(key), path: codingPath + [key])
    }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        try ArchiveDecoder.integer(try entry(key), Int.self, path: codingPath + [key])
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try ArchiveDecoder.double(try entry(key), path: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let item = try entry(key)
        return try ArchiveDecoder(value: item, codingPath: codingPath + [key], state: decoder.state)
            .container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let item = try entry(key)
        return try ArchiveDecoder(value: item, codingPath: codingPath + [key], state: decoder.state).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(key: ArchiveCodingKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try superDecoder(key: key as any CodingKey)
    }

    private func superDecoder(key: any CodingKey) throws -> any Decoder {
        guard let i = index(ofText: key.stringValue) else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\"")
            )
        }
        decoder.markUsed(i)
        return ArchiveDecoder(value: entries[i].value, codingPath: codingPath + [key], state: decoder.state)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: ArchiveDecoder
    let items: [CBOR]
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    init(decoder: ArchiveDecoder, items: [CBOR]) {
        self.decoder = decoder
        self.items = items
    }

    private var path: [any CodingKey] { codingPath + [ArchiveCodingKey(index: currentIndex)] }

    private mutating func next(_ type: Any.Type) throws -> CBOR {
        guard currentIndex < items.count else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(codingPath: path, debugDescription: "the array has no more elements")
            )
        }
        let item = items[currentIndex]
        return item
    }

    private mutating func advance() {
        currentIndex += 1
        decoder.markRead(count: currentIndex)
    }

    mutating func decodeNil() throws -> Bool {
        guard case .null = try next(Never.self) else { return false }
        advance()
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let item = try next(T.self)
        let value = try ArchiveDecoder.unbox(item, as: T.self, path: path, state: decoder.state)
        advance()
        return value
    }

    mutating func decode(_ type: String.Type) throws -> String {
        let value = try ArchiveDecoder.string(try next(type), path: path)
        advance()
        return value
    }

    mutating func decode(_ type: Int.Type) throws -> Int {
        let value = try ArchiveDecoder.integer(try next(type), Int.self, path: path)
        advance()
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        let item = try next(KeyedDecodingContainer<NestedKey>.self)
        let container = try ArchiveDecoder(value: item, codingPath: path, state: decoder.state).container(keyedBy: type)
        advance()
        return container
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let item = try next((any UnkeyedDecodingContainer).self)
        let container = try ArchiveDecoder(value: item, codingPath: path, state: decoder.state).unkeyedContainer()
        advance()
        return container
    }

    mutating func superDecoder() throws -> any Decoder {
        let item = try next((any Decoder).self)
        let sub = ArchiveDecoder(value: item, codingPath: path, state: decoder.state)
        advance()
        return sub
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
