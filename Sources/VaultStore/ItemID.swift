/// An item's file name stem: 64 lowercase hex digits of a keyed BLAKE2b hash of the item's canonical
/// primary key, so that a directory listing reveals no service or account.
public struct ItemID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 64 hex digits.
    public let rawValue: String

    /// The number of hash bytes behind an id.
    public static let hashByteCount = 32
    /// The file name suffix of item files.
    public static let fileSuffix = ".item"

    /// Validates an id read back from a file name or handed in by a caller.
    public init(_ rawValue: String) throws(StoreError) {
        let bytes = Array(rawValue.utf8)
        guard bytes.count == 2 * Self.hashByteCount,
            bytes.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw StoreError(.invalidName, "\"\(rawValue.debugDescriptionEscaped)\" is not an item id (64 hex digits)")
        }
        self.rawValue = rawValue
    }

    init(hash: [UInt8]) {
        rawValue = Hex.encode(hash)
    }

    /// The id of the 32 hash bytes `hashBytes` (e.g. from a persistent reference).
    public init(hashBytes: [UInt8]) throws(StoreError) {
        guard hashBytes.count == Self.hashByteCount else {
            throw StoreError(.invalidName, "an item id is \(Self.hashByteCount) bytes, not \(hashBytes.count)")
        }
        self.init(hash: hashBytes)
    }

    /// The 32 hash bytes behind the id.
    public var hashBytes: [UInt8] { Hex.decode(rawValue) ?? [] }

    /// The item's file name, `<id>.item`.
    public var fileName: String { rawValue + Self.fileSuffix }

    /// The id of a file name `<id>.item`, or nil for any other name (temp files, foreign files).
    public init?(fileName: String) {
        guard fileName.hasSuffix(Self.fileSuffix) else { return nil }
        guard let id = try? ItemID(String(fileName.dropLast(Self.fileSuffix.count))) else { return nil }
        self = id
    }

    /// The hex digits.
    public var description: String { rawValue }

    /// Orders by the hex digits.
    public static func < (lhs: ItemID, rhs: ItemID) -> Bool { lhs.rawValue < rhs.rawValue }
}
