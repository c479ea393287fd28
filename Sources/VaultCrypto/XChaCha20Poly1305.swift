internal import CSodium

/// XChaCha20-Poly1305-IETF authenticated encryption with associated data (libsodium's
/// `crypto_aead_xchacha20poly1305_ietf_*`). Its 24-byte nonces are random, so they never need a counter.
@usableFromInline package enum XChaCha20Poly1305 {
    /// The key size: 32 bytes.
    package static let keyByteCount = SymmetricKey.byteCount
    /// The nonce size: 24 bytes.
    @usableFromInline package static let nonceByteCount = 24
    /// The authentication tag size: 16 bytes, appended to the ciphertext.
    package static let tagByteCount = 16

    /// A fresh random nonce.
    package static func randomNonce() throws(CryptoError) -> [UInt8] {
        try SecureRandom.bytes(count: nonceByteCount)
    }

    /// Encrypts `plaintext` and authenticates it together with `associatedData`; returns
    /// ciphertext followed by the tag.
    package static func seal(
        _ plaintext: UnsafeRawBufferPointer,
        key: SymmetricKey,
        nonce: [UInt8],
        associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialized()
        try checkNonce(byteCount: nonce.count)
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

    /// Encrypts `plaintext` (see `seal(_:key:nonce:associatedData:)`).
    package static func seal(
        _ plaintext: [UInt8], key: SymmetricKey, nonce: [UInt8], associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try plaintext.withTypedBytes { (bytes) throws(CryptoError) in
            try seal(bytes, key: key, nonce: nonce, associatedData: associatedData)
        }
    }

    /// Encrypts the contents of `plaintext` (see `seal(_:key:nonce:associatedData:)`).
    package static func seal(
        _ plaintext: SecureBytes, key: SymmetricKey, nonce: [UInt8], associatedData: [UInt8]
    ) throws(CryptoError) -> [UInt8] {
        try plaintext.withUnsafeBytes { (bytes) throws(CryptoError) in
            try seal(bytes, key: key, nonce: nonce, associatedData: associatedData)
        }
    }

    /// Checks the tag over `ciphertext` (ciphertext followed by tag) and `associatedData`, and returns
    /// the plaintext in `Plaintext` memory: `SecureBytes` (the default) for keys and long-lived secrets,
    /// `TransientBytes` for short-lived plaintexts read on every look-up, where secure memory's nine
    /// system calls (mmap, mprotect, mlock, …) would cost more than the read itself. Any mismatch is
    /// `authenticationFailed`; no byte of an unauthenticated plaintext is ever returned.
    @inlinable
    package static func open<Plaintext: PlaintextStorage>(
        _ ciphertext: UnsafeRawBufferPointer, key: SymmetricKey, nonce: [UInt8], associatedData: [UInt8],
        as storage: Plaintext.Type = SecureBytes.self
    ) throws(CryptoError) -> Plaintext {
        try nonce.withTypedBytes { (nonce) throws(CryptoError) in
            try open(ciphertext, key: key, nonce: nonce, associatedData: associatedData, as: storage)
        }
    }

    @usableFromInline
    static func open<Plaintext: PlaintextStorage>(
        _ ciphertext: UnsafeRawBufferPointer, key: SymmetricKey, nonce: UnsafeRawBufferPointer,
        associatedData: [UInt8], as storage: Plaintext.Type
    ) throws(CryptoError) -> Plaintext {
        let count = try plaintextCount(ciphertext.count, nonceByteCount: nonce.count)
        return try Plaintext.filled(count: count) { (out) throws(CryptoError) in
            try decrypt(ciphertext, into: out, key: key, nonce: nonce, associatedData: associatedData)
        }
    }

    /// `open(_:key:nonce:associatedData:as:)` of a sealed box as `bytes` hold it: the nonce at
    /// `nonceStart`, the ciphertext from `start` to the end. The nonce is not copied out (a read
    /// opens one such box on every look-up). Ranges that overlap are no layout a sealer writes: such a
    /// box fails authentication.
    @inlinable
    package static func open<Plaintext: PlaintextStorage>(
        _ bytes: [UInt8], nonceAt nonceStart: Int, from start: Int, key: SymmetricKey, associatedData: [UInt8],
        as storage: Plaintext.Type = SecureBytes.self
    ) throws(CryptoError) -> Plaintext {
        guard nonceStart >= 0, nonceStart <= bytes.count - nonceByteCount, start >= 0, start <= bytes.count else {
            throw CryptoError(
                .invalidArgument,
                "a nonce at \(nonceStart) and a ciphertext from \(start) do not fit in \(bytes.count) bytes")
        }
        return try bytes.withTypedBytes { (raw) throws(CryptoError) in
            try open(
                UnsafeRawBufferPointer(rebasing: raw[start...]), key: key,
                nonce: UnsafeRawBufferPointer(rebasing: raw[nonceStart..<(nonceStart + nonceByteCount)]),
                associatedData: associatedData, as: storage)
        }
    }

    /// `open(_:key:nonce:associatedData:as:)` of the ciphertext that fills `bytes` from `start` on.
    @inlinable
    package static func open<Plaintext: PlaintextStorage>(
        _ bytes: [UInt8], from start: Int, key: SymmetricKey, nonce: [UInt8], associatedData: [UInt8],
        as storage: Plaintext.Type = SecureBytes.self
    ) throws(CryptoError) -> Plaintext {
        try bytes.withTypedBytes { (raw) throws(CryptoError) in
            try open(
                UnsafeRawBufferPointer(rebasing: raw[start...]), key: key, nonce: nonce, associatedData: associatedData,
                as: storage)
        }
    }

    /// The one decryption: checks the tag and writes the plaintext into `out` (of the plaintext's size).
    @usableFromInline
    static func decrypt(
        _ ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, key: SymmetricKey,
        nonce: UnsafeRawBufferPointer, associatedData: [UInt8]
    ) throws(CryptoError) {
        try key.withUnsafeBytes { (keyBytes) throws(CryptoError) in
            try decrypt(ciphertext, into: out, keyBytes: keyBytes, nonce: nonce, associatedData: associatedData)
        }
    }

    /// `decrypt(_:into:key:nonce:associatedData:)` under a key's bytes (`keyByteCount` of them).
    static func decrypt(
        _ ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
        keyBytes: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, associatedData: [UInt8]
    ) throws(CryptoError) {
        precondition(keyBytes.count == keyByteCount, "an XChaCha20-Poly1305 key is 32 bytes")
        var outputLength: UInt64 = 0
        let status = associatedData.withUnsafeBufferPointer { ad in
            crypto_aead_xchacha20poly1305_ietf_decrypt(
                out.baseAddress?.assumingMemoryBound(to: UInt8.self), &outputLength, nil,
                ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                ad.baseAddress, UInt64(ad.count),
                nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
                keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        guard status == 0 else { throw CryptoError(.authenticationFailed, "authentication failed") }
        guard outputLength == UInt64(out.count) else {
            throw CryptoError(.invalidArgument, "decryption returned \(outputLength) bytes")
        }
    }

    /// The size of the plaintext inside `ciphertext`, after the checks that need no key.
    @usableFromInline
    static func plaintextCount(_ ciphertextCount: Int, nonceByteCount: Int) throws(CryptoError) -> Int {
        try Sodium.ensureInitialized()
        try checkNonce(byteCount: nonceByteCount)
        guard ciphertextCount >= tagByteCount else {
            throw CryptoError(
                .authenticationFailed,
                "ciphertext of \(ciphertextCount) bytes is shorter than the \(tagByteCount)-byte tag"
            )
        }
        return ciphertextCount - tagByteCount
    }

    private static func checkNonce(byteCount: Int) throws(CryptoError) {
        guard byteCount == nonceByteCount else {
            throw CryptoError(
                .invalidArgument, "nonce is \(byteCount) bytes; XChaCha20-Poly1305 needs \(nonceByteCount)")
        }
    }
}

/// Memory that a decryption writes a plaintext into.
@usableFromInline package protocol PlaintextStorage {
    /// `count` bytes that `fill` writes; wiped (and freed) if `fill` fails.
    static func filled(count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void)
        throws(CryptoError) -> Self
}

extension SecureBytes: PlaintextStorage {
    /// Secure memory of `count` bytes that `fill` writes.
    @usableFromInline package static func filled(
        count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void
    )
        throws(CryptoError) -> SecureBytes
    {
        do {
            return try SecureBytes(exactly: count, initializer: fill)
        } catch {
            throw error.cryptoError
        }
    }
}

extension TransientBytes: PlaintextStorage {
    /// Ordinary memory of `count` bytes that `fill` writes, wiped when the object goes.
    @usableFromInline package static func filled(
        count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(CryptoError) -> Void
    )
        throws(CryptoError) -> TransientBytes
    {
        try TransientBytes(count: count, fill)
    }
}
