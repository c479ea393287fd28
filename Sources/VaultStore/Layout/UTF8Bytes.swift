extension [UInt8] {
    /// Appends the UTF-8 bytes of `text`, one by one from its span: `+= text.utf8` and `Array(text.utf8)`
    /// take a slow path for a small string (up to 15 bytes, held inline), which most names and fields
    /// the vault hashes and binds are, on every read. (Always inlined: called, it cost a get 100
    /// instructions more than the loop written in place.)
    @inlinable @inline(__always) package mutating func appendUTF8(of text: String) {
        let utf8 = text.utf8.span
        for i in utf8.indices { append(utf8[i]) }
    }
}
