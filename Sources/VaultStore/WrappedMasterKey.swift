import VaultCrypto

/// A `master.key` that holds the master key wrapped under a passphrase (124 bytes):
///
///     header     = "VLTK" | version u8 (1) | kdf u8 (1 = Argon2id v1.3) | aead u8 (1 = XChaCha20-Poly1305)
///                  | reserved u8 (0) | operations u32be | memory bytes u64be | salt (16) | nonce (24)
///     ciphertext = AEAD(Argon2id(passphrase, salt, limits), nonce, master key, ad = header)   (48)
///     checksum   = BLAKE2b-128 of header || ciphertext                                         (16)
///
/// The AEAD authenticates the header (limits and salt included), so a changed limit cannot weaken the
/// wrapping unnoticed. The checksum tells accidental damage apart from a wrong passphrase: a failed
/// AEAD with an intact checksum is a wrong passphrase (or a deliberate forgery).
enum WrappedMasterKey {
    static let magic: [UInt8] = Array("VLTK".utf8)
    static let headerByteCount = 60
    static let byteCount = headerByteCount + 48 + 16
    static let checksumDomain = KeyDerivation.Domain("vault.mkey.sum.1")

    static func isWrapped(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && Array(bytes[0..<4]) == magic
    }

    static func wrap(
        _ masterKey: SecureBytes, passphrase: SecureBytes, limits: PassphraseKeyDerivation.Limits
    ) throws(StoreError) -> [UInt8] {
        do {
            let salt = try SecureRandom.bytes(count: PassphraseKeyDerivation.saltByteCount)
            let nonce = try XChaCha20Poly1305.randomNonce()
            var header = magic + [1, 1, 1, 0]
            header += bigEndian(UInt64(limits.operations), bytes: 4)
            header += bigEndian(limits.memoryBytes, bytes: 8)
            header += salt + nonce
            let wrappingKey = try PassphraseKeyDerivation.deriveKey(passphrase: passphrase, salt: salt, limits: limits)
            let ciphertext = try XChaCha20Poly1305.seal(
                masterKey, key: wrappingKey, nonce: nonce, associatedData: header)
            let body = header + ciphertext
            return body + (try checksum(body))
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.crypto(error, "cannot wrap the master key")
        }
    }

    static func unwrap(_ bytes: [UInt8], passphrase: SecureBytes, path: String) throws(StoreError) -> SecureBytes {
        guard bytes.count == byteCount, isWrapped(bytes) else {
            throw StoreError(
                .integrity, "\(path) is \(bytes.count) bytes; a passphrase-wrapped key file is \(byteCount)",
                path: path)
        }
        let body = Array(bytes[0..<(byteCount - 16)])
        let sum: [UInt8]
        do {
            sum = try checksum(body)
        } catch {
            throw StoreError.crypto(error, "cannot check \(path)")
        }
        guard sum == Array(bytes[(byteCount - 16)...]) else {
            throw StoreError(
                .integrity, "\(path) is damaged (its checksum does not match); restore it from a backup", path: path)
        }
        guard bytes[4] == 1 else {
            throw StoreError(
                .unsupportedFormat, "\(path) has key-file version \(bytes[4]); this build reads version 1", path: path)
        }
        guard bytes[5] == 1, bytes[6] == 1, bytes[7] == 0 else {
            throw StoreError(.unsupportedFormat, "\(path) names an unknown key derivation or cipher", path: path)
        }
        let limits = PassphraseKeyDerivation.Limits(
            operations: integer(bytes[8..<12]), memoryBytes: integer(bytes[12..<20]))
        guard limits.isValid else {
            throw StoreError(.integrity, "\(path) asks for Argon2id limits outside what vault accepts", path: path)
        }
        let header = Array(bytes[0..<headerByteCount])
        let salt = Array(bytes[20..<36])
        let nonce = Array(bytes[36..<60])
        let wrappingKey: SecureBytes
        do {
            wrappingKey = try PassphraseKeyDerivation.deriveKey(passphrase: passphrase, salt: salt, limits: limits)
        } catch {
            throw StoreError.crypto(error, "cannot derive the key of \(path)")
        }
        let ciphertext = Array(bytes[headerByteCount..<(headerByteCount + 48)])
        let result: Result<SecureBytes, CryptoError> = ciphertext.withUnsafeBytes { raw in
            Result { () throws(CryptoError) in
                try XChaCha20Poly1305.open(raw, key: wrappingKey, nonce: nonce, associatedData: header)
            }
        }
        do {
            return try result.get()
        } catch {
            throw StoreError(.wrongPassphrase, "wrong passphrase for \(path)", path: path)
        }
    }

    private static func checksum(_ body: [UInt8]) throws -> [UInt8] {
        // Unkeyed in effect (a fixed public key): a checksum against damage, not a MAC.
        let key = try SecureBytes(count: 32) { _ in }
        return try KeyDerivation.keyedHash(body, key: key, domain: checksumDomain, outputByteCount: 16)
    }

    private static func bigEndian(_ value: UInt64, bytes: Int) -> [UInt8] {
        (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }

    private static func integer(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
