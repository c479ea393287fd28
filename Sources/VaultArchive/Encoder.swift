import FoundationEssentials

/// A value being encoded: finished leaves, or containers that may still be filled through references.
enum EncodeNode {
    case value(CBOR)
    case array(EncodeArray)
    case map(EncodeMap)
    case deferred(ArchiveEncoder)
}

/// The key of an encoded map entry: a text key or an integer key.
enum EncodeKey {
    case text(String)
    case int(Int)

    /// The key of a keyed container: always its text (only `[Int: V]` is written with integer keys).
    @inline(__always)
    init(_ key: some CodingKey) {
        self = .text(key.stringValue)
    }

    /// -1, 0 or 1 as the keys' deterministic encodings order bytewise (RFC 8949 §4.2.1). Text keys compare as
    /// UTF-8 bytes: two spellings that Swift's `String` treats as equal are two keys, never one.
    @inline(__always)
    static func compare(_ a: EncodeKey, _ b: EncodeKey) -> Int {
        switch (a, b) {
        case (.text(let x), .text(let y)):
            return UTF8Text.compareEncoded(x, y)
        case (.int, .text): return -1
        case (.text, .int): return 1
        case (.int(let x), .int(let y)):
            if x == y { return 0 }
            // Major type 0 (non-negative) sorts before major type 1; within type 1, -1 < -2 < ... bytewise.
            if (x >= 0) != (y >= 0) { return x >= 0 ? -1 : 1 }
            return (x >= 0 ? x < y : x > y) ? -1 : 1
        }
    }
}

final class EncodeArray {
    var items: [EncodeNode] = []
}

final class EncodeMap {
    var entries: [(key: EncodeKey, value: EncodeNode)] = []
}

/// Shared state of one top-level encode.
final class EncodeState {
    let maxDepth: Int
    let userInfo: [CodingUserInfoKey: Any]
    /// The first misuse of the container API (which cannot throw); reported when the encode finishes.
    var misuse: EncodingError?

    init(maxDepth: Int, userInfo: [CodingUserInfoKey: Any]) {
        self.maxDepth = maxDepth
        self.userInfo = userInfo
    }
}

/// The `Encoder` handed to `Encodable` types.
final class ArchiveEncoder: Encoder {
    let state: EncodeState
    let codingPath: [any CodingKey]
    let depth: Int
    var node: EncodeNode?

    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    init(state: EncodeState, codingPath: [any CodingKey], depth: Int) {
        self.state = state
        self.codingPath = codingPath
        self.depth = depth
    }

    func recordMisuse(_ message: String) {
        if state.misuse == nil {
            state.misuse = EncodingError.invalidValue(
                (),
                EncodingError.Context(codingPath: codingPath, debugDescription: message)
            )
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let map: EncodeMap
        switch node {
        case .map(let existing):
            map = existing
        case nil:
            map = EncodeMap()
            node = .map(map)
        default:
            recordMisuse("a keyed container was requested after another value was encoded at this path")
            map = EncodeMap()
        }
        return KeyedEncodingContainer(ArchiveKeyedEncodingContainer<Key>(encoder: self, map: map))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: EncodeArray
        switch node {
        case .array(let existing):
            array = existing
        case nil:
            array = EncodeArray()
            node = .array(array)
        default:
            recordMisuse("an unkeyed container was requested after another value was encoded at this path")
            array = EncodeArray()
        }
        return ArchiveUnkeyedEncodingContainer(encoder: self, array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        ArchiveSingleValueEncodingContainer(encoder: self)
    }

    /// Encodes one value that lives at `path` (one level below this encoder) into a node.
    func box<T: Encodable>(_ value: T, at key: any CodingKey) throws -> EncodeNode {
        if let leaf = try Self.leaf(value, path: codingPath + [key]) { return .value(leaf) }
        guard depth < state.maxDepth else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: codingPath + [key],
                    debugDescription: "nesting deeper than the limit of \(state.maxDepth)"
                )
            )
        }
        let child = ArchiveEncoder(state: state, codingPath: codingPath + [key], depth: depth + 1)
        return try child.encodeComposite(value)
    }

    /// Lets a non-leaf value encode itself into this (fresh) encoder and returns what it wrote.
    func encodeComposite<T: Encodable>(_ value: T) throws -> EncodeNode {
        // Only a Dictionary is one, so a type of another size is spared the cast (see `unbox`).
        if mayBeHashedCollection(T.self), let dictionary = value as? any IntKeyedEncodable {
            return try dictionary.archiveNode(encoder: self)
        }
        try value.encode(to: self)
        return node ?? .map(EncodeMap())
    }

    /// The CBOR of values the archive maps itself (scalars, strings, bytes, Date, UUID, URL), or nil.
    @inline(__always)
    static func leaf<T: Encodable>(_ value: T, path: @autoclosure () -> [any CodingKey]) throws -> CBOR? {
        if T.self == String.self { return .text(value as! String) }
        if T.self == Int.self { return int(Int64(value as! Int)) }
        if T.self == Bool.self { return .bool(value as! Bool) }
        if T.self == Double.self { return .float(value as! Double) }
        if T.self == Data.self { return .bytes([UInt8](value as! Data)) }
        if T.self == [UInt8].self { return .bytes(value as! [UInt8]) }
        if T.self == Date.self { return try date(value as! Date, path: path()) }
        if T.self == UUID.self { return uuid(value as! UUID) }
        if T.self == URL.self { return .tagged(CBORTag.uri, .text((value as! URL).absoluteString)) }
        if T.self == Float.self { return .float(Double(value as! Float)) }
        if T.self == Int64.self { return int(value as! Int64) }
        if T.self == UInt64.self { return .unsigned(value as! UInt64) }
        if T.self == UInt.self { return .unsigned(UInt64(value as! UInt)) }
        if T.self == Int32.self { return int(Int64(value as! Int32)) }
        if T.self == UInt32.self { return .unsigned(UInt64(value as! UInt32)) }
        if T.self == Int16.self { return int(Int64(value as! Int16)) }
        if T.self == UInt16.self { return .unsigned(UInt64(value as! UInt16)) }
        if T.self == Int8.self { return int(Int64(value as! Int8)) }
        if T.self == UInt8.self { return .unsigned(UInt64(value as! UInt8)) }
        return nil
    }

    @inline(__always)
    static func int(_ v: Int64) -> CBOR {
        v >= 0 ? .unsigned(UInt64(v)) : .negative(UInt64(bitPattern: -1 - v))
    }

    static func date(_ date: Date, path: [any CodingKey]) throws -> CBOR {
        .tagged(CBORTag.epochDate, try dateContent(date, path: path))
    }

    /// The content of tag 1 for `date`: the seconds since 1970, an integer when whole, else a float.
    static func dateContent(_ date: Date, path: @autoclosure () -> [any CodingKey]) throws -> CBOR {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else {
            throw EncodingError.invalidValue(
                date,
                EncodingError.Context(codingPath: path(), debugDescription: "a date must be finite")
            )
        }
        // The decoder accepts only seconds that `Date` holds exactly; never write an archive it would refuse.
        guard Date(timeIntervalSince1970: seconds).timeIntervalSince1970 == seconds else {
            throw EncodingError.invalidValue(
                date,
                EncodingError.Context(codingPath: path(), debugDescription: "the date cannot be archived exactly")
            )
        }
        if let whole = Int64(exactly: seconds) { return int(whole) }
        return .float(seconds)
    }

    static func uuid(_ uuid: UUID) -> CBOR {
        let u = uuid.uuid
        return .tagged(
            CBORTag.uuid,
            .bytes([
                u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15,
            ])
        )
    }
}

/// `[Int: V]`, written as a CBOR map with integer keys (every other keyed container has text keys).
protocol IntKeyedEncodable {
    func archiveNode(encoder: ArchiveEncoder) throws -> EncodeNode
}

extension Dictionary: IntKeyedEncodable where Key == Int, Value: Encodable {
    func archiveNode(encoder: ArchiveEncoder) throws -> EncodeNode {
        let map = EncodeMap()
        map.entries.reserveCapacity(count)
        for (key, value) in self {
            map.entries.append((.int(key), try encoder.box(value, at: ArchiveCodingKey(intValue: key))))
        }
        return .map(map)
    }
}
