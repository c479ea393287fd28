/// Byte strings compared and hashed through spans: the generic `elementsEqual` and `for byte in` over
/// a `String.UTF8View` or an `ArraySlice` walk the collection's indices, and a get compared its two
/// primary-key attributes and hashed its metadata bytes that way at about a thousand instructions each
/// (callgrind of `vault-bench --profile-gets`).
extension Span where Element == UInt8 {
    /// Whether both hold the same bytes (not constant-time: for cache keys and attribute filters).
    func hasSameBytes(as other: Span<UInt8>) -> Bool {
        guard count == other.count else { return false }
        for index in indices where self[index] != other[index] { return false }
        return true
    }
}
