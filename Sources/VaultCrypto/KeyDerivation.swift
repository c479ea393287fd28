internal import CSodium

/// Keyed BLAKE2b (`crypto_generichash_blake2b_salt_personal`) for subkeys and keyed hashes. The
/// 16-byte personalisation string separates domains: the same master key and the same input give
/// unrelated outputs for different purposes.
public enum KeyDerivation {
    /// A domain label, at most 16 bytes of ASCII; padded with zeros to BLAKE2b's 16-byte
    /// personalisation.
    public struct Domain: Sendable, Hashable {
        let personal: [UInt8]

        /// A label such as "vault.enc.v1". Traps if longer than 16 bytes: labels are constants in code.
        public init(_ label: StaticString) {
            let bytes = label.withUTF8Buffer { Array($0) }
            precondition(bytes.count <= 16, "a BLAKE2b personalisation label is at most 16 bytes")
            personal = bytes + [UInt8](repeating: 0, count: 16 - bytes.count)
        }
    }

    /// Derives a 32-byte subkey of `key` for `domain` and `context` (e.g. a group name).
    public static func subkey(of key: SecureBytes, domain: Domain, context: [UInt8]) throws -> SecureBytes {
        try Sodium.ensureInitialized()
        return try SecureBytes(count: 32) { out in
            try hash(into: out, key: key, domain: domain, message: context)
        }
    }

    /// A keyed hash of `message` under `key` for `domain`, `outputByteCount` bytes (16...64). Not
    /// secret: used for item ids and marker checks.
    public static func keyedHash(
        _ message: [UInt8],
        key: SecureBytes,
        domain: Domain,
        outputByteCount: Int = 32
    ) throws -> [UInt8] {
        try Sodium.ensureInitialized()
        var output = [UInt8](repeating: 0, count: outputByteCount)
        try output.withUnsafeMutableBytes { out in
            try hash(into: out, key: key, domain: domain, message: message)
        }
        return output
    }

    private static func hash(
        into out: UnsafeMutableRawBufferPointer,
        key: SecureBytes,
        domain: Domain,
        message: [UInt8]
    ) throws {
        guard (16...64).contains(out.count), (16...64).contains(key.count) else {
            throw CryptoError(.invalidArgument, "BLAKE2b output and key must be 16 to 64 bytes")
        }
        let salt = [UInt8](repeating: 0, count: 16)
        let status = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBufferPointer { input in
                crypto_generichash_blake2b_salt_personal(
                    out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                    input.baseAddress, UInt64(input.count),
                    keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count,
                    salt, domain.personal)
            }
        }
        guard status == 0 else { throw CryptoError(.invalidArgument, "BLAKE2b failed") }
    }
}
