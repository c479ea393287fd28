import CVaultOpenSSL
import VaultCrypto

/// The session algorithm `dh-ietf1024-sha256-aes128-cbc-pkcs7` of the Secret Service API
/// (specification, "Transfer of Secrets"): Diffie-Hellman in the 1024-bit MODP group of RFC 2409
/// (section 6.2, generator 2), HKDF-SHA256 (RFC 5869) of the shared secret with no salt and no info to a
/// 16-byte key, and AES-128-CBC with PKCS#7 padding and a random IV per secret. All of it is OpenSSL's
/// libcrypto; this file is the one place that calls it.
struct SessionCrypto {
    /// What went wrong, for the client's error.
    struct Failure: Error {
        let message: String
    }

    /// The group's prime, RFC 2409 section 6.2.
    static let prime: [UInt8] = Array(
        hex: "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
            + "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
            + "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")

    /// The AES key the exchange agreed on.
    let key: SecureBytes

    /// OpenSSL's secure heap (locked, never dumped, cleared when freed), where `BN_secure_new` puts the
    /// exchange's secret exponent and shared secret; without it (a memlock limit too low) they are on
    /// the ordinary heap, and cleared when freed all the same.
    static let secureHeap: Bool = CRYPTO_secure_malloc_init(32_768, 32) == 1

    /// Agrees on a key with a client whose public key is `clientPublicKey` (big-endian); also returns
    /// this side's public key (128 bytes, big-endian) for the client.
    static func agree(clientPublicKey: [UInt8]) throws(Failure) -> (SessionCrypto, publicKey: [UInt8]) {
        _ = secureHeap
        guard let context = BN_CTX_secure_new() else { throw Failure(message: "out of memory") }
        defer { BN_CTX_free(context) }
        let prime = BN_bin2bn(Self.prime, Int32(Self.prime.count), nil)
        let generator = BN_new()
        let secret = BN_secure_new() ?? BN_new()
        let ours = BN_new()
        let theirs = BN_bin2bn(clientPublicKey, Int32(clientPublicKey.count), nil)
        let shared = BN_secure_new() ?? BN_new()
        let bound = BN_new()
        defer {
            BN_free(prime)
            BN_free(generator)
            BN_clear_free(secret)
            BN_free(ours)
            BN_free(theirs)
            BN_clear_free(shared)
            BN_free(bound)
        }
        guard let prime, let generator, let secret, let ours, let theirs, let shared, let bound else {
            throw Failure(message: "out of memory")
        }
        // The client's key must lie in [2, p − 2]: 0, 1 and p − 1 give a shared secret anyone knows.
        guard BN_set_word(generator, 2) == 1, BN_copy(bound, prime) != nil, BN_sub_word(bound, 1) == 1,
            BN_cmp(theirs, generator) >= 0, BN_cmp(theirs, bound) < 0
        else { throw Failure(message: "the client's Diffie-Hellman public key is out of range") }
        guard BN_priv_rand_range(secret, bound) == 1, BN_add_word(secret, 1) == 1,
            BN_mod_exp(ours, generator, secret, prime, context) == 1,
            BN_mod_exp(shared, theirs, secret, prime, context) == 1
        else { throw Failure(message: "the Diffie-Hellman exchange failed") }
        var publicKey = [UInt8](repeating: 0, count: Self.prime.count)
        var sharedBytes = [UInt8](repeating: 0, count: Self.prime.count)
        defer { sharedBytes.wipe() }
        guard BN_bn2binpad(ours, &publicKey, Int32(publicKey.count)) == publicKey.count,
            BN_bn2binpad(shared, &sharedBytes, Int32(sharedBytes.count)) == sharedBytes.count
        else { throw Failure(message: "the Diffie-Hellman exchange failed") }
        return (SessionCrypto(key: try hkdf(sharedBytes)), publicKey)
    }

    /// HKDF-SHA256 of `secret`, no salt, no info, 16 bytes.
    private static func hkdf(_ secret: [UInt8]) throws(Failure) -> SecureBytes {
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nil) else { throw Failure(message: "out of memory") }
        defer { EVP_PKEY_CTX_free(context) }
        do {
            return try SecureBytes(exactly: 16) { (buffer) throws(Failure) in
                var length = buffer.count
                guard EVP_PKEY_derive_init(context) == 1, EVP_PKEY_CTX_set_hkdf_md(context, EVP_sha256()) == 1,
                    EVP_PKEY_CTX_set1_hkdf_key(context, secret, Int32(secret.count)) == 1,
                    EVP_PKEY_derive(context, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &length) == 1,
                    length == buffer.count
                else { throw Failure(message: "the key derivation failed") }
            }
        } catch {
            switch error {
            case .filling(let failure): throw failure
            case .allocation(let cause): throw Failure(message: "cannot hold a session key: \(cause)")
            }
        }
    }

    /// `plaintext` encrypted under the session's key: a fresh IV and the ciphertext.
    func encrypt(_ plaintext: [UInt8]) throws(Failure) -> (iv: [UInt8], ciphertext: [UInt8]) {
        var iv = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&iv, 16) == 1 else { throw Failure(message: "no random IV") }
        return (iv, try run(encrypting: true, plaintext, iv: iv))
    }

    /// `ciphertext` decrypted; a wrong key, IV or padding is a failure.
    func decrypt(_ ciphertext: [UInt8], iv: [UInt8]) throws(Failure) -> [UInt8] {
        guard iv.count == 16, !ciphertext.isEmpty, ciphertext.count % 16 == 0 else {
            throw Failure(message: "the secret is not AES-128-CBC with a 16-byte IV")
        }
        return try run(encrypting: false, ciphertext, iv: iv)
    }

    private func run(encrypting: Bool, _ input: [UInt8], iv: [UInt8]) throws(Failure) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure(message: "out of memory") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var written: Int32 = 0
        var final: Int32 = 0
        let succeeded = key.withUnsafeBytes { keyBytes in
            let keyPointer = keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            return EVP_CipherInit_ex(context, EVP_aes_128_cbc(), nil, keyPointer, iv, encrypting ? 1 : 0) == 1
                && EVP_CipherUpdate(context, &output, &written, input, Int32(input.count)) == 1
                && output.withUnsafeMutableBufferPointer {
                    EVP_CipherFinal_ex(context, $0.baseAddress! + Int(written), &final) == 1
                }
        }
        guard succeeded else {
            output.wipe()
            throw Failure(
                message: encrypting ? "the encryption failed" : "the secret does not decrypt under the session's key")
        }
        output.removeSubrange(Int(written + final)...)
        return output
    }
}

extension Array where Element == UInt8 {
    /// The bytes that `hex` spells (two digits each).
    fileprivate init(hex: String) {
        let digits = Array(hex.utf8)
        self = stride(from: 0, to: digits.count, by: 2).map { index in
            UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16)!
        }
    }
}
