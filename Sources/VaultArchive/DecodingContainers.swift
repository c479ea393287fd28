import FoundationEssentials

struct ArchiveKeyedDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
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

struct ArchiveUnkeyedDecodingContainer: UnkeyedDecodingContainer {
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
