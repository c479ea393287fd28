/// A validated access-group name, which is also a directory name under `groups/`: 1 to 200 bytes of
/// `[A-Za-z0-9._-]`, not starting with '.'. So it can never be "..", a hidden temp name or a path.
package struct GroupName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The name.
    package let rawValue: String

    /// The longest accepted name, in bytes.
    package static let maximumLength = 200

    /// Validates `rawValue`; throws `invalidName` naming it and the rule it breaks.
    package init(_ rawValue: String) throws(StoreError) {
        let bytes = Array(rawValue.utf8)
        guard !bytes.isEmpty else {
            throw StoreError(.invalidName, "access group name is empty")
        }
        guard bytes.count <= Self.maximumLength else {
            throw StoreError(
                .invalidName, "access group name is \(bytes.count) bytes; at most \(Self.maximumLength) are allowed")
        }
        guard bytes[0] != UInt8(ascii: ".") else {
            throw StoreError(.invalidName, "access group name \"\(rawValue)\" must not start with '.'")
        }
        for byte in bytes where !Self.isAllowed(byte) {
            throw StoreError(
                .invalidName,
                "access group name \"\(rawValue.debugDescriptionEscaped)\" has a character outside [A-Za-z0-9._-]")
        }
        self.rawValue = rawValue
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// The name.
    package var description: String { rawValue }

    /// Appends the name as records that bind to a group hold it: its byte count in two bytes, most
    /// significant first, then its bytes.
    func appendLengthPrefixed(to bytes: inout [UInt8]) {
        bytes.appendBigEndian(UInt16(rawValue.utf8.count))
        bytes.appendUTF8(of: rawValue)
    }

    /// Orders by the name's bytes.
    package static func < (lhs: GroupName, rhs: GroupName) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension String {
    /// The string with control characters escaped, so that a hostile name cannot forge output lines.
    var debugDescriptionEscaped: String {
        String(debugDescription.dropFirst().dropLast())
    }
}
