internal import CSodium

/// XChaCha20-Poly1305-IETF authenticated encryption with associated data (libsodium's
/// `crypto_aead_xchacha20poly1305_ietf_*`). Its 24-byte nonces are random, so they never need a counter.
public enum XChaCha20Poly1305 {
    /// The key size: 32 bytes.
    public static let keyByteCount = 32
    /// The nonce size: 24 bytes.
    public static let nonceByteCount = 24
    /// The authentication tag size: 16 bytes, appended to the ciphertext.
    public static let tagByteCount = 16

    /// A fresh random nonce.
    public static func randomNonce() throws(CryptoError) -> [UInt8] {
        try SecureRandom.bytes(count: nonceByteCount)
    }

    /// Encrypts `plaintext` and authenticates it together with `associatedData`; returns
    /// ciphertext followed by the tag.
    public static func seal(
        _ plaintext: UnsafeRawBufferPointer,
        key: SecureBytes,
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialized()
        try checkSizes(key: key, nonce: nonce)
        var output = [UInt8](repeating: 0, count: plaintext.count + tagByteCount)
        var outputLength: UInt64 = 0
        let status = key.withUnsafeBytes { keyBytes in
            output.withUnsafeMutableBufferPointer { out in
                associatedData.withUnsafeBufferPointer { ad in
                    crypto_aead_xchacha20poly1305_ietf_encrypt(
                        out.baseAddress!, &outputLength,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        ad.baseAddress, UInt64(ad.count),
                        nil, nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard status == 0, outputLength == UInt64(output.count) else {
            throw CryptoError(.invalidArgument, "encryption of \(plaintext.count) bytes failed")
        }
        return output
    }

    /// Encrypts the contents of `plaintext` (see `seal(_:key:nonce:associatedData:)`).
    public static func seal(
        _ plaintext: SecureBytes,
        key: SecureBytes,
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try plaintext.withUnsafeBytes { (bytes) throws(CryptoError) in
            try seal(bytes, key: key, nonce: nonce, associatedData: associatedData)
        }
    }

    /// Checks the tag over `ciphertext` (ciphertext followed by tag) and `associatedData`, and returns
    /// the plaintext in secure memory. Any mismatch is `authenticationFailed`; no byte of an
    /// unauthenticated plaintext is ever returned.
    public static func open(
        _ ciphertext: UnsafeRawBufferPointer,
        key: SecureBytes,
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> SecureBytes {
        try checkOpen(ciphertext, key: key, nonce: nonce)
        do {
            return try SecureBytes(count: ciphertext.count - tagByteCount) { out in
                var outputLength: UInt64 = 0
                let status = key.withUnsafeBytes { keyBytes in
                    associatedData.withUnsafeBufferPointer { ad in
                        crypto_aead_xchacha20poly1305_ietf_decrypt(
                            out.baseAddress?.assumingMemoryBound(to: UInt8.self), &outputLength, nil,
                            ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                            ad.baseAddress, UInt64(ad.count),
                            nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                    }
                }
                guard status == 0 else {
                    throw CryptoError(.authenticationFailed, "authentication failed")
                }
            }
        } catch let error as CryptoError {
            throw error
        } catch {
            throw CryptoError(.invalidArgument, "decryption failed: \(error)")
        }
    }

    /// Like `open(_:key:nonce:associatedData:)`, but the plaintext goes into ordinary memory that is
    /// wiped when the returned object goes (`TransientBytes`): for short-lived plaintexts read on every
    /// look-up, where secure memory's nine system calls (mmap, mprotect, mlock, …) would cost more than
    /// the read itself.
    public static func openTransient(
        _ ciphertext: UnsafeRawBufferPointer,
        key: SecureBytes,
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> TransientBytes {
        try checkOpen(ciphertext, key: key, nonce: nonce)
        var output = [UInt8](repeating: 0, count: max(1, ciphertext.count - tagByteCount))
        var outputLength: UInt64 = 0
        let status = key.withUnsafeBytes { keyBytes in
            output.withUnsafeMutableBufferPointer { out in
                associatedData.withUnsafeBufferPointer { ad in
                    crypto_aead_xchacha20poly1305_ietf_decrypt(
                        out.baseAddress, &outputLength, nil,
                        ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                        ad.baseAddress, UInt64(ad.count),
                        nonce, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        let result = TransientBytes(output)  // wiped when it goes, also on the failure path below
        guard status == 0 else { throw CryptoError(.authenticationFailed, "authentication failed") }
        guard Int(outputLength) == result.count || (outputLength == 0 && result.count == 1) else {
            throw CryptoError(.invalidArgument, "decryption returned \(outputLength) bytes")
        }
        return outputLength == 0 ? TransientBytes([]) : result
    }

    private static func checkOpen(_ ciphertext: UnsafeRawBufferPointer, key: SecureBytes, nonce: [UInt8])
        throws(CryptoError)
    {
        try Sodium.ensureInitialized()
        try checkSizes(key: key, nonce: nonce)
        guard ciphertext.count >= tagByteCount else {
            throw CryptoError(
                .authenticationFailed,
                "ciphertext of \(ciphertext.count) bytes is shorter than the \(tagByteCount)-byte tag"
            )
        }
    }

    private static func checkSizes(key: SecureBytes, nonce: [UInt8]) throws(CryptoError) {
        guard key.count == keyByteCount else {
            throw CryptoError(.invalidArgument, "key is \(key.count) bytes; XChaCha20-Poly1305 needs \(keyByteCount)")
        }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(
                .invalidArgument, "nonce is \(nonce.count) bytes; XChaCha20-Poly1305 needs \(nonceByteCount)")
        }
    }
}
