internal import CSodium

/// Anonymous public-key encryption to one recipient (libsodium's sealed boxes, `crypto_box_seal`:
/// X25519 with an ephemeral key, then XSalsa20-Poly1305): whoever holds the recipient's public key
/// seals, only the holder of its secret key opens. It does not say who sealed: what must be
/// authenticated is authenticated by the caller.
package enum SealedBox {
    /// A public key's size: 32 bytes.
    package static let publicKeyByteCount = 32
    /// A secret key's size: 32 bytes.
    package static let secretKeyByteCount = 32
    /// What sealing adds to a message: the ephemeral public key and the tag, 48 bytes.
    package static let overheadByteCount = 48

    /// A new key pair: the public key, and the secret key in secure memory.
    package static func keyPair() throws(CryptoError) -> (publicKey: [UInt8], secretKey: SecureBytes) {
        try Sodium.ensureInitialized()
        var publicKey = [UInt8](repeating: 0, count: publicKeyByteCount)
        let secretKey: SecureBytes
        do {
            secretKey = try SecureBytes(exactly: secretKeyByteCount) { (buffer) throws(CryptoError) in
                let status = publicKey.withUnsafeMutableBufferPointer { publicBytes in
                    crypto_box_keypair(
                        publicBytes.baseAddress!, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self))
                }
                guard status == 0 else { throw CryptoError(.invalidArgument, "making a key pair failed") }
            }
        } catch {
            switch error {
            case .allocation(let failure), .filling(let failure): throw failure
            }
        }
        return (publicKey, secretKey)
    }

    /// `plaintext` (not empty) sealed to the holder of `publicKey`'s secret key.
    package static func seal(_ plaintext: SecureBytes, to publicKey: [UInt8]) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialized()
        guard publicKey.count == publicKeyByteCount, plaintext.count > 0 else {
            throw CryptoError(
                .invalidArgument,
                "a sealed box takes a \(publicKeyByteCount)-byte public key (not \(publicKey.count)) and a message")
        }
        var sealed = [UInt8](repeating: 0, count: plaintext.count + overheadByteCount)
        let status = plaintext.withUnsafeBytes { message in
            sealed.withUnsafeMutableBufferPointer { out in
                crypto_box_seal(
                    out.baseAddress!, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    UInt64(message.count), publicKey)
            }
        }
        guard status == 0 else { throw CryptoError(.invalidArgument, "sealing \(plaintext.count) bytes failed") }
        return sealed
    }

    /// What `seal(_:to:)` sealed to `publicKey`, opened with its `secretKey` into secure memory;
    /// `authenticationFailed` when it was sealed to another key or altered.
    package static func open(_ sealed: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) throws(CryptoError)
        -> SecureBytes
    {
        try Sodium.ensureInitialized()
        guard publicKey.count == publicKeyByteCount, secretKey.count == secretKeyByteCount,
            sealed.count > overheadByteCount
        else {
            throw CryptoError(.authenticationFailed, "a sealed box of \(sealed.count) bytes does not open")
        }
        do {
            return try SecureBytes(exactly: sealed.count - overheadByteCount) { (buffer) throws(CryptoError) in
                let status = secretKey.withUnsafeBytes { secret in
                    crypto_box_seal_open(
                        buffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        sealed, UInt64(sealed.count), publicKey, secret.baseAddress!.assumingMemoryBound(to: UInt8.self)
                    )
                }
                guard status == 0 else {
                    throw CryptoError(.authenticationFailed, "a sealed box does not open under this key")
                }
            }
        } catch {
            switch error {
            case .allocation(let failure), .filling(let failure): throw failure
            }
        }
    }
}
