import FoundationEssentials

/// A JSON value as etcd's gateway sends and takes it, read and written with FoundationEssentials'
/// `JSONDecoder` and `JSONEncoder`. The client does not use Foundation's `JSONSerialization`: Foundation
/// (with ICU) is a library every process that loads the vault's would load and initialise.
enum JSONValue: Sendable, Equatable, Codable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Strings first: nearly every value etcd sends is one (base64, and 64-bit integers as text).
        if container.decodeNil() {
            self = .null
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let fields = try? container.decode([String: JSONValue].self) {
            self = .object(fields)
        } else if let elements = try? container.decode([JSONValue].self) {
            self = .array(elements)
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else {
            self = .number(try container.decode(Double.self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let fields): try container.encode(fields)
        case .array(let elements): try container.encode(elements)
        case .string(let text): try container.encode(text)
        case .number(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        case .null: try container.encodeNil()
        }
    }

    /// `bytes` parsed, or nil when they are not JSON.
    static func parse(_ bytes: [UInt8]) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
    }

    /// The value as JSON text.
    func serialized() throws -> [UInt8] {
        Array(try JSONEncoder().encode(self))
    }

    /// The field `name` of an object; nil for a missing field or a value that is not an object.
    subscript(name: String) -> JSONValue? {
        guard case .object(let fields) = self else { return nil }
        return fields[name]
    }

    var string: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    var bool: Bool? {
        guard case .bool(let flag) = self else { return nil }
        return flag
    }

    var array: [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    /// A number that is a whole number that fits an Int (gRPC's status codes).
    var integer: Int? {
        guard case .number(let number) = self, let whole = Int(exactly: number) else { return nil }
        return whole
    }

    /// What kind of value this is, for messages: "a string", "an object", ….
    var kind: String {
        switch self {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    var isObject: Bool {
        if case .object = self { return true }
        return false
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByDictionaryLiteral,
    ExpressibleByArrayLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}
