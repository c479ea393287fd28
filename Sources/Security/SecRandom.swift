/// Apple's `SecRandomRef`: a random-number generator; only `kSecRandomDefault` exists.
public typealias SecRandomRef = OpaquePointer

/// Apple's `kSecRandomDefault`: the system's cryptographically secure generator.
nonisolated(unsafe) public let kSecRandomDefault: SecRandomRef? = nil

/// Fills `count` bytes at `bytes` with cryptographically secure random bytes (Apple's
/// `SecRandomCopyBytes`; here from the kernel via `SystemRandomNumberGenerator`). Returns
/// `errSecSuccess`, or `errSecParam` for a negative count.
@discardableResult
public func SecRandomCopyBytes(_ rnd: SecRandomRef?, _ count: Int, _ bytes: UnsafeMutableRawPointer) -> Int32 {
    guard count >= 0 else { return errSecParam }
    var generator = SystemRandomNumberGenerator()
    var offset = 0
    while offset < count {
        var word = generator.next()
        let n = min(8, count - offset)
        withUnsafeBytes(of: &word) { raw in
            (bytes + offset).copyMemory(from: raw.baseAddress!, byteCount: n)
        }
        offset += n
    }
    return errSecSuccess
}
