/// A decoded CBOR data item, as the scanner produces it and the writer consumes it.
///
/// Only the shapes the archive supports exist here: indefinite lengths, simple values other than
/// `false`, `true` and `null`, and `undefined` are rejected by the scanner and cannot be represented.
package enum CBOR: Sendable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`.
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a text string (always valid UTF-8).
    case text(String)
    /// Major type 4: an array.
    case array([CBOR])
    /// Major type 5: a map; the scanner guarantees strictly increasing encoded keys.
    case map([CBORMapEntry])
    /// Major type 6: a tagged item.
    indirect case tagged(UInt64, CBOR)
    /// Simple values 20 and 21.
    case bool(Bool)
    /// Simple value 22.
    case null
    /// Major type 7, additional information 25, 26 or 27: a float of any width, held exactly as a `Double`.
    case float(Double)

    /// The major type this item is written with.
    package var majorType: UInt8 {
        switch self {
        case .unsigned: 0
        case .negative: 1
        case .bytes: 2
        case .text: 3
        case .array: 4
        case .map: 5
        case .tagged: 6
        case .bool, .null, .float: 7
        }
    }

    /// A short name of the item's kind, for error messages.
    package var kindDescription: String {
        switch self {
        case .unsigned: "an unsigned integer"
        case .negative: "a negative integer"
        case .bytes: "a byte string"
        case .text: "a text string"
        case .array: "an array"
        case .map: "a map"
        case .tagged(let tag, _): "an item with tag \(tag)"
        case .bool: "a boolean"
        case .null: "null"
        case .float: "a float"
        }
    }
}

/// One key/value pair of a CBOR map.
package struct CBORMapEntry: Sendable {
    /// The key.
    package var key: CBOR
    /// The value.
    package var value: CBOR

    /// Creates an entry.
    package init(key: CBOR, value: CBOR) {
        self.key = key
        self.value = value
    }
}

/// A coding key used for array indices, map keys and archive-internal positions in coding paths.
package struct ArchiveCodingKey: CodingKey, Sendable {
    /// The key's text.
    package var stringValue: String
    /// The key's integer value, for array indices and integer map keys.
    package var intValue: Int?

    /// Creates a text key.
    package init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    /// Creates an integer key.
    package init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }

    /// Creates the key for an array element.
    package init(index: Int) {
        self.stringValue = "Index \(index)"
        self.intValue = index
    }

    /// The key `super`, used by `superEncoder()` and `superDecoder()`.
    package static let `super` = ArchiveCodingKey(stringValue: "super")
}

/// Well-known tag numbers the archive uses.
package enum CBORTag {
    /// RFC 8949 §3.4.2: epoch-based date/time.
    package static let epochDate: UInt64 = 1
    /// RFC 8949 §3.4.5.3: URI.
    package static let uri: UInt64 = 32
    /// IANA registry: binary UUID (RFC 9562).
    package static let uuid: UInt64 = 37
    /// RFC 8949 §3.4.6: self-described CBOR.
    package static let selfDescribed: UInt64 = 55799
}
