import FoundationEssentials

/// Reads deterministic CBOR one expected item at a time, for a codec written by hand for one record shape
/// (the vault's item metadata), where building a ``CBOR`` tree and decoding it through `Codable` costs
/// more than the record.
///
/// Each read returns nil when the next bytes are not the item asked for in the core deterministic
/// encoding, and the reader's position is then unspecified: the caller gives up and leaves the verdict
/// (and the error naming the item) to ``VaultArchive/decode(_:from:options:userInfo:)``. Nothing it reads
/// is refused by the scanner: heads in their shortest form, no indefinite lengths, text of valid UTF-8
/// (but for `textBytes`, which leaves the bytes to its caller), floats in their shortest width, dates as
/// the archive's decoder reads them.
package struct CBORReader {
    private let input: ArraySlice<UInt8>
    private var position: Int

    /// A reader at the start of `input`.
    package init(_ input: ArraySlice<UInt8>) {
        self.input = input
        position = input.startIndex
    }

    /// Whether every byte has been read.
    package var isAtEnd: Bool { position == input.endIndex }

    /// Reads the archive's envelope (`CBORWriter.envelope`).
    package mutating func envelope() -> Bool {
        for byte in CBORWriter.envelope {
            guard self.byte() == byte else { return false }
        }
        return true
    }

    private mutating func byte() -> UInt8? {
        guard position < input.endIndex else { return nil }
        defer { position += 1 }
        return input[position]
    }

    /// Reads `size` bytes as a big-endian unsigned integer.
    private mutating func bigEndian(_ size: Int) -> UInt64? {
        guard input.endIndex - position >= size else { return nil }
        var value: UInt64 = 0
        for offset in 0..<size { value = value << 8 | UInt64(input[position + offset]) }
        position += size
        return value
    }

    /// The argument of a head of `major` type in its shortest form (the scanner's `readArgument`).
    package mutating func head(_ major: UInt8) -> UInt64? {
        guard let initial = byte(), initial >> 5 == major else { return nil }
        return argument(initial & 0x1F)
    }

    private mutating func argument(_ info: UInt8) -> UInt64? {
        switch info {
        case 0..<24: return UInt64(info)
        case 24: return bigEndian(1).flatMap { $0 >= 24 ? $0 : nil }
        case 25: return bigEndian(2).flatMap { $0 > 0xFF ? $0 : nil }
        case 26: return bigEndian(4).flatMap { $0 > 0xFFFF ? $0 : nil }
        case 27: return bigEndian(8).flatMap { $0 > 0xFFFF_FFFF ? $0 : nil }
        default: return nil
        }
    }

    /// The content of a byte or text string whose head was read: `count` bytes, if there are that many.
    private mutating func content(_ count: UInt64) -> ArraySlice<UInt8>? {
        guard count <= UInt64(input.endIndex - position) else { return nil }
        let start = position
        position += Int(count)
        return input[start..<position]
    }

    /// A byte string.
    package mutating func bytes() -> ArraySlice<UInt8>? {
        head(2).flatMap { content($0) }
    }

    /// The bytes of a text string, not checked to be UTF-8: for map keys, compared with known keys.
    package mutating func textBytes() -> ArraySlice<UInt8>? {
        head(3).flatMap { content($0) }
    }

    /// A text string of valid UTF-8.
    package mutating func text() -> String? {
        textBytes().flatMap(UTF8Text.validated)
    }

    /// A text string that is `key`, byte for byte (a map key the caller expects next).
    package mutating func key(_ key: String) -> Bool {
        guard let bytes = textBytes() else { return false }
        return UTF8Text.compareEncoded(key, bytes.span) == 0
    }

    /// An unsigned integer (major type 0).
    package mutating func unsigned() -> UInt64? { head(0) }

    /// An integer of major type 0 or 1 that fits in `Int64`.
    package mutating func integer() -> Int64? {
        guard position < input.endIndex else { return nil }
        let negative = input[position] >> 5 == 1
        guard let argument = head(negative ? 1 : 0), let magnitude = Int64(exactly: argument) else { return nil }
        return negative ? -1 - magnitude : magnitude
    }

    /// `true` or `false`.
    package mutating func bool() -> Bool? {
        switch byte() {
        case 0xF5: true
        case 0xF4: false
        default: nil
        }
    }

    /// A date: tag 1 around an integer or a float, read as the archive's decoder reads a `Date`.
    package mutating func date() -> Date? {
        guard head(6) == CBORTag.epochDate, position < input.endIndex else { return nil }
        let content: CBOR
        switch input[position] {
        case 0xF9, 0xFA, 0xFB:
            guard let seconds = float() else { return nil }
            content = .float(seconds)
        default:
            guard let seconds = integer() else { return nil }
            content = seconds >= 0 ? .unsigned(UInt64(seconds)) : .negative(UInt64(-1 - seconds))
        }
        return try? ArchiveDecoder.dateContent(content, path: [])
    }

    /// A float in its shortest width (the scanner's rules; the only NaN is `f9 7e 00`).
    private mutating func float() -> Double? {
        switch byte() {
        case 0xF9:
            guard let bits = bigEndian(2) else { return nil }
            let half = Float16(bitPattern: UInt16(bits))
            return half.isNaN && bits != 0x7E00 ? nil : Double(half)
        case 0xFA:
            guard let bits = bigEndian(4) else { return nil }
            let single = Float(bitPattern: UInt32(bits))
            return single.isNaN || Float16(exactly: single) != nil ? nil : Double(single)
        case 0xFB:
            guard let bits = bigEndian(8) else { return nil }
            let double = Double(bitPattern: bits)
            return double.isNaN || Float(exactly: double) != nil ? nil : double
        default:
            return nil
        }
    }
}
