import FoundationEssentials

/// The Codable archive that replaces NSKeyedArchiver: deterministic CBOR (RFC 8949 §4.2.1).
///
/// An archive is the self-describe tag 55799 around an array of two items, the format version (1) and the
/// value: `d9 d9 f7 82 01 <value>`. Equal values give equal bytes, and the decoder accepts only what the
/// encoder would write, so `encode(decode(x)) == x` for every archive `x` that decodes into a type whose
/// `Codable` conformance reads every field it writes (see `docs/ARCHIVE.md` for the mapping and the rules).
public enum VaultArchive {
    /// The archive format version this code writes and reads.
    public static let formatVersion = 1

    /// Limits and strictness of encoding and decoding.
    public struct Options: Sendable {
        /// The deepest nesting of arrays, maps and tags accepted (and written); default 256; values above 1024 are treated as 1024.
        public var maxDepth: Int
        /// The largest archive accepted (and written), in bytes; default 4 MiB.
        public var maxSize: Int
        /// Whether decoding fails when a map entry or array element is not read by the type being decoded;
        /// default `true`, which keeps `encode(decode(x)) == x`.
        public var rejectsUnknownKeys: Bool

        /// Creates options; the defaults suit keychain items.
        public init(maxDepth: Int = 256, maxSize: Int = 4 << 20, rejectsUnknownKeys: Bool = true) {
            self.maxDepth = maxDepth
            self.maxSize = maxSize
            self.rejectsUnknownKeys = rejectsUnknownKeys
        }

        var effectiveDepth: Int { Swift.max(0, Swift.min(maxDepth, 1024)) }
    }

    /// Encodes `value` as an archive.
    ///
    /// - Throws: `EncodingError.invalidValue` for a non-finite `Date`, nesting deeper than
    ///   `options.maxDepth`, an archive larger than `options.maxSize`, a misuse of the container API, or any
    ///   error the value's `encode(to:)` throws.
    public static func encode<T: Encodable>(
        _ value: T,
        options: Options = Options(),
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> [UInt8] {
        let state = EncodeState(maxDepth: options.effectiveDepth, userInfo: userInfo)
        let node: EncodeNode
        if let leaf = try ArchiveEncoder.leaf(value, path: []) {
            node = .value(leaf)
        } else {
            node = try ArchiveEncoder(state: state, codingPath: [], depth: 0).encodeComposite(value)
        }
        if let misuse = state.misuse { throw misuse }
        var writer = CBORWriter(capacity: 128)
        writer.maxDepth = options.effectiveDepth
        writer.bytes.append(contentsOf: CBORWriter.envelope)
        writer.write(node)
        guard !writer.exceededDepth else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "nesting deeper than the limit of \(options.effectiveDepth)"
                )
            )
        }
        guard writer.bytes.count <= options.maxSize else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: [],
                    debugDescription: "archive of \(writer.bytes.count) bytes exceeds the size limit of "
                        + "\(options.maxSize) bytes"
                )
            )
        }
        return writer.bytes
    }

    /// Encodes `value` as an archive, returned as `Data`; see ``encode(_:options:userInfo:)``.
    public static func encodeData<T: Encodable>(
        _ value: T,
        options: Options = Options(),
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> Data {
        Data(try encode(value, options: options, userInfo: userInfo))
    }

    /// Decodes a value of type `T` from an archive.
    ///
    /// - Throws: `DecodingError` (never traps) when the bytes are not an archive, are not in the
    ///   deterministic encoding, exceed a limit, or do not match `T`; the error's coding path leads to the
    ///   offending item.
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from bytes: [UInt8],
        options: Options = Options(),
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        try decode(type, fromScanned: try scan(bytes, options: options), options: options, userInfo: userInfo)
    }

    /// The second half of `decode`: the item `scan` made of the bytes (which does not depend on `T`),
    /// into a `T`. For the fuzz oracle, which decodes one input into many types from one scan.
    package static func decode<T: Decodable>(
        _ type: T.Type, fromScanned item: CBOR, options: Options = Options(),
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        let state = DecodeState(userInfo: userInfo, rejectsUnknownKeys: options.rejectsUnknownKeys)
        return try ArchiveDecoder.unbox(item, as: T.self, path: [], state: state)
    }

    /// Decodes a value of type `T` from an archive held in `Data` (see the `[UInt8]` variant).
    public static func decode<T: Decodable>(
        _ type: T.Type,
        from data: Data,
        options: Options = Options(),
        userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws -> T {
        guard data.count <= options.maxSize else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: [],
                    debugDescription:
                        "archive of \(data.count) bytes exceeds the size limit of \(options.maxSize) bytes"
                )
            )
        }
        return try decode(type, from: [UInt8](data), options: options, userInfo: userInfo)
    }

    /// Scans an archive into its CBOR item without decoding it into a type (for tests and fuzzing).
    package static func scan(_ bytes: [UInt8], options: Options = Options()) throws -> CBOR {
        try CBORScanner.scanArchive(bytes, maxDepth: options.effectiveDepth, maxSize: options.maxSize)
    }

    /// Writes a CBOR item as an archive (for tests and fuzzing).
    package static func write(_ item: CBOR) -> [UInt8] {
        var writer = CBORWriter(capacity: 128)
        writer.bytes.append(contentsOf: CBORWriter.envelope)
        writer.write(item)
        return writer.bytes
    }
}
