/// An item's file name stem: 64 lowercase hex digits of a keyed BLAKE2b hash of the item's canonical
/// primary key, so that a directory listing reveals no service or account. Held as the whole file name,
/// `<stem>.item`.
package struct ItemID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The item's file name, `<id>.item`. Held rather than the bare hex digits: every read opens the
    /// file by this name, and appending the suffix was an allocation a read.
    package let fileName: String

    /// The 64 hex digits.
    package var rawValue: String { String(hexDigits) }

    private var hexDigits: Substring { Substring(fileName.utf8.dropLast(Self.fileSuffix.utf8.count)) }

    /// `prefix` and the hex digits, in one allocation.
    func name(prefixedBy prefix: String) -> String {
        var name = prefix
        name.reserveCapacity(prefix.utf8.count + 2 * Self.hashByteCount)
        // append(contentsOf:) of a Substring: `+=` would take the generic append of a sequence of
        // characters, which the runtime resolves on first use (165,000 instructions of a CLI put).
        name.append(contentsOf: hexDigits)
        return name
    }

    /// Appends the hex digits' bytes to `bytes`: the whole file name, then cut, since a string's bytes
    /// are copied at once and those of a part of it one by one (a read binds its file to its id).
    func appendHexDigits(to bytes: inout [UInt8]) {
        bytes += fileName.utf8
        bytes.removeLast(Self.fileSuffix.utf8.count)
    }

    /// The number of hash bytes behind an id.
    package static let hashByteCount = 32
    /// The file name suffix of item files.
    package static let fileSuffix = ".item"

    /// Validates an id read back from a file name or handed in by a caller.
    package init(_ rawValue: String) throws(StoreError) {
        guard Self.areHexDigits(rawValue.utf8) else {
            throw StoreError(.invalidName, "\"\(rawValue.debugDescriptionEscaped)\" is not an item id (64 hex digits)")
        }
        fileName = rawValue + Self.fileSuffix
    }

    init(hash: [UInt8]) {
        fileName = Hex.encode(hash) + Self.fileSuffix
    }

    /// The id of the 32 hash bytes `hashBytes` (e.g. from a persistent reference).
    package init(hashBytes: [UInt8]) throws(StoreError) {
        guard hashBytes.count == Self.hashByteCount else {
            throw StoreError(.invalidName, "an item id is \(Self.hashByteCount) bytes, not \(hashBytes.count)")
        }
        self.init(hash: hashBytes)
    }

    /// The 32 hash bytes behind the id.
    package var hashBytes: [UInt8] { Hex.decode(hexDigits) ?? [] }

    /// The id of a file name `<id>.item`, or nil for any other name (temp files, foreign files).
    package init?(fileName: String) {
        guard fileName.hasSuffix(Self.fileSuffix), Self.areHexDigits(fileName.utf8.dropLast(Self.fileSuffix.utf8.count))
        else { return nil }
        self.fileName = fileName
    }

    /// Whether `digits` are 64 lowercase hex digits.
    static func areHexDigits(_ digits: some Collection<UInt8>) -> Bool {
        digits.count == 2 * hashByteCount
            && digits.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The hex digits.
    package var description: String { rawValue }

    /// Orders by the hex digits (every file name has the same suffix after them).
    package static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.fileName < rhs.fileName }
}
