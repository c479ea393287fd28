/// A D-Bus value, as a message carries it: typed, with its signature (the D-Bus specification,
/// "Type System"). Built and taken apart by the services; marshalled by `DBusConnection`.
package enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// An `ay`, as the bytes (a secret travels as one: one buffer, not a value per byte).
    case bytes([UInt8])
    /// An array of values of signature `element` (given, so that an empty array has a type).
    case array(element: String, [DBusValue])
    /// A dictionary entry: only as an element of an array (`a{…}`).
    indirect case dictionaryEntry(DBusValue, DBusValue)
    case structure([DBusValue])
    indirect case variant(DBusValue)

    /// The value's signature.
    package var signature: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionaryEntry(let key, let value): "{" + key.signature + value.signature + "}"
        case .structure(let fields): "(" + fields.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    /// `ao`.
    package static func objectPaths(_ paths: [String]) -> DBusValue {
        .array(element: "o", paths.map { .objectPath($0) })
    }

    /// `a{ss}`.
    package static func stringDictionary(_ pairs: [String: String]) -> DBusValue {
        .array(
            element: "{ss}",
            pairs.sorted { $0.key < $1.key }.map { .dictionaryEntry(.string($0.key), .string($0.value)) })
    }

    /// `a{sv}`.
    package static func properties(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .array(element: "{sv}", pairs.map { .dictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    // MARK: Taking apart

    /// The string of an `s`, `o` or `g`.
    package var stringValue: String? {
        switch self {
        case .string(let text), .objectPath(let text), .signature(let text): text
        default: nil
        }
    }

    /// The bytes of an `ay`.
    package var byteArray: [UInt8]? {
        if case .bytes(let bytes) = self { return bytes }
        guard case .array("y", let elements) = self else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(elements.count)
        for case .byte(let byte) in elements { bytes.append(byte) }
        return bytes.count == elements.count ? bytes : nil
    }

    /// The paths of an `ao`.
    package var objectPathArray: [String]? {
        guard case .array("o", let elements) = self else { return nil }
        let paths = elements.compactMap { element -> String? in
            if case .objectPath(let path) = element { return path }
            return nil
        }
        return paths.count == elements.count ? paths : nil
    }

    /// The entries of an `a{ss}`.
    package var stringDictionaryValue: [String: String]? {
        guard case .array("{ss}", let elements) = self else { return nil }
        var result: [String: String] = [:]
        for element in elements {
            guard case .dictionaryEntry(.string(let key), .string(let value)) = element else { return nil }
            result[key] = value
        }
        return result
    }

    /// The entries of an `a{sv}`, their variants opened.
    package var propertiesValue: [String: DBusValue]? {
        guard case .array("{sv}", let elements) = self else { return nil }
        var result: [String: DBusValue] = [:]
        for element in elements {
            guard case .dictionaryEntry(.string(let key), .variant(let value)) = element else { return nil }
            result[key] = value
        }
        return result
    }

    /// The value inside a `v`; any other value as it is.
    package var unwrapped: DBusValue {
        if case .variant(let inner) = self { return inner.unwrapped }
        return self
    }
}
