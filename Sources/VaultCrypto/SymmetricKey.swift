/// A 256-bit secret key in secure memory (as swift-crypto's `SymmetricKey`): what XChaCha20-Poly1305
/// encrypts under and keyed BLAKE2b hashes under. Its size is fixed, so a key of another size cannot
/// reach a cipher; the bytes are reachable only inside a closure; equality is constant-time.
@usableFromInline package struct SymmetricKey: Sendable, Equatable, CustomStringConvertible {
    /// The size of every key: 32 bytes.
    package static let byteCount = 32

    /// The key's bytes.
    package let bytes: SecureBytes

    /// The key held in `bytes`; anything but `byteCount` bytes is `invalidArgument`.
    package init(_ bytes: SecureBytes) throws(CryptoError) {
        guard bytes.count == Self.byteCount else {
            throw CryptoError(.invalidArgument, "a key is \(Self.byteCount) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// A key with the bytes of `bytes` (the caller wipes its own copy).
    package init(copying bytes: [UInt8]) throws(CryptoError) {
        try self.init(try SecureBytes(copying: bytes))
    }

    /// A fresh random key from the system's CSPRNG.
    package static func random() throws(CryptoError) -> SymmetricKey {
        try SymmetricKey(try SecureBytes.random(count: byteCount))
    }

    /// The all-zero key: for checksums that need a key but no secret (never for encryption).
    package static func zero() throws(CryptoError) -> SymmetricKey {
        try SymmetricKey(copying: [UInt8](repeating: 0, count: byteCount))
    }

    /// Gives `body` read access to the key's bytes. Do not let the pointer escape.
    package func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try bytes.withUnsafeBytes(body)
    }

    /// Constant-time equality of the keys' bytes.
    @usableFromInline package static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool {
        lhs.bytes.constantTimeEquals(rhs.bytes)
    }

    /// Redacted.
    @usableFromInline package var description: String { "SymmetricKey(redacted)" }
}
