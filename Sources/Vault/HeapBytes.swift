import FoundationEssentials

/// Estimates of the heap bytes a value owns, for the byte bounds of the caches (`BoundedCache`):
/// Swift's and Foundation's layouts on 64-bit Linux as of Swift 6.3, rounded up as malloc does.
/// Estimates, not measurements: they err on the high side, and `vault-bench`'s peak RSS rows check
/// them against the process.
enum HeapBytes {
    /// An object of `payload` bytes after the 16-byte header of a Swift object.
    static func object(_ payload: Int) -> Int { rounded(16 + payload) }

    /// A native string's storage: none for up to 15 UTF-8 bytes (kept inline), else a 32-byte
    /// header, the bytes and a terminating 0.
    static func of(_ text: String) -> Int {
        let count = text.utf8.count
        return count <= 15 ? 0 : rounded(32 + count + 1)
    }

    static func of(_ text: String?) -> Int { text.map { of($0) } ?? 0 }

    /// An array's buffer: a 32-byte header and its capacity.
    static func of(_ bytes: [UInt8]) -> Int { bytes.capacity == 0 ? 0 : rounded(32 + bytes.capacity) }

    /// A slice's base array (a cache key that is a copy of its own owns all of it).
    static func of(_ bytes: ArraySlice<UInt8>) -> Int { bytes.isEmpty ? 0 : rounded(32 + bytes.count) }

    /// `Data`: inline up to 14 bytes, else a storage object (about 64 bytes) and the bytes.
    static func of(_ data: Data) -> Int { data.count <= 14 ? 0 : 64 + rounded(data.count) }

    static func of(_ data: Data?) -> Int { data.map { of($0) } ?? 0 }

    /// malloc's 16-byte granules.
    static func rounded(_ count: Int) -> Int { (count + 15) / 16 * 16 }
}

extension ItemAttributes {
    /// The heap bytes of the attributes' strings, data and key set.
    var heapByteEstimate: Int {
        var total = HeapBytes.of(service) + HeapBytes.of(account) + HeapBytes.of(label)
        total += HeapBytes.of(itemDescription) + HeapBytes.of(comment) + HeapBytes.of(generic)
        total += HeapBytes.of(server) + HeapBytes.of(securityDomain) + HeapBytes.of(`protocol`)
        total += HeapBytes.of(authenticationType) + HeapBytes.of(path) + HeapBytes.of(accessGroup?.rawValue)
        if let keys = dataTypedKeys {
            total += HeapBytes.object(32 + 16 * 2 * keys.count) + keys.reduce(0) { $0 + HeapBytes.of($1) }
        }
        return total
    }
}
