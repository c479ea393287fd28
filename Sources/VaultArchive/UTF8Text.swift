/// Text compared as its UTF-8 bytes.
///
/// Swift's `String ==`, `<` and hashing use Unicode canonical equivalence ("é" as U+00E9 equals "e" followed
/// by U+0301), but CBOR compares map keys as data items, with no normalization (RFC 8949 §5.6.1), and the
/// archive writes text as is: two spellings are two keys, and a lookup must find the one spelling it names.
enum UTF8Text {
    /// The text in `bytes` if they are valid UTF-8, else nil (never repaired). A span, not a generic
    /// algorithm on the slice, finds the ASCII prefix: unspecialised (the fuzzers' debug build), those
    /// allocate per byte.
    static func validated(_ bytes: ArraySlice<UInt8>) -> String? {
        let span = bytes.span
        var index = 0
        while index < span.count && span[index] < 0x80 { index += 1 }
        // ASCII is valid UTF-8: nothing to repair, so the fast initializer is exact.
        if index == span.count { return String(decoding: bytes, as: UTF8.self) }
        return String(validating: bytes, as: UTF8.self)
    }

    /// Whether `a` and `b` are the same bytes.
    @inline(__always)
    static func equal(_ a: String, _ b: String) -> Bool {
        compareEncoded(a, b) == 0
    }

    /// -1, 0 or 1 as the deterministic encodings of `a` and `b` as text strings order bytewise: the shorter
    /// UTF-8 first (its head is smaller), then byte by byte. Reads both in place (no allocation).
    static func compareEncoded(_ a: String, _ b: String) -> Int {
        let count = a.utf8.count
        let other = b.utf8.count
        if count != other { return count < other ? -1 : 1 }
        return compareBytes(a, b.utf8.span)
    }

    /// `compareEncoded(_:_:)` with `b` given as its UTF-8 bytes, for a search that compares one text with many.
    @inline(__always)
    static func compareEncoded(_ a: String, _ b: Span<UInt8>) -> Int {
        let count = a.utf8.count
        if count != b.count { return count < b.count ? -1 : 1 }
        return compareBytes(a, b)
    }

    /// Compares the UTF-8 of `a` with `b`, of the same length, byte by byte.
    @inline(__always)
    private static func compareBytes(_ a: String, _ b: Span<UInt8>) -> Int {
        let x = a.utf8.span
        for i in 0..<x.count where x[i] != b[i] {
            return x[i] < b[i] ? -1 : 1
        }
        return 0
    }

    /// `text` quoted for an error message, each scalar outside printable ASCII written as `\u{…}` (two spellings
    /// of one character print alike otherwise); cut after 40 scalars.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for (offset, scalar) in text.unicodeScalars.enumerated() {
            if offset == 40 {
                result += "…"
                break
            }
            if scalar.value >= 0x20, scalar.value < 0x7F, scalar != "\"", scalar != "\\" {
                result.unicodeScalars.append(scalar)
            } else {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return result + "\""
    }
}
