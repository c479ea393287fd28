internal import CSodium

/// Argon2id (libsodium's `crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`): a 32-byte key from a
/// passphrase, a 16-byte salt and cost limits. The limits are stored with whatever the key wraps, so
/// that they can be raised later without breaking old files.
public enum PassphraseKeyDerivation {
    /// The cost of one derivation.
    public struct Limits: Sendable, Hashable {
        /// Passes over memory (Argon2's t).
        public let operations: UInt64
        /// Memory in bytes (Argon2's m).
        public let memoryBytes: UInt64

        /// Limits; use the named presets unless there is a reason not to.
        public init(operations: UInt64, memoryBytes: UInt64) {
            self.operations = operations
            self.memoryBytes = memoryBytes
        }

        /// libsodium's "moderate" preset (3 passes, 256 MiB): the default for a vault's master key.
        public static let moderate = Limits(operations: 3, memoryBytes: 256 << 20)
        /// libsodium's "interactive" preset (2 passes, 64 MiB).
        public static let interactive = Limits(operations: 2, memoryBytes: 64 << 20)
        /// libsodium's "sensitive" preset (4 passes, 1 GiB): the default ceiling of what a file may ask
        /// for when it is opened (`fits(within:)`).
        public static let sensitive = Limits(operations: 4, memoryBytes: 1 << 30)
        /// The smallest limits libsodium accepts (1 pass, 8 KiB): for tests only.
        public static let minimum = Limits(operations: 1, memoryBytes: 8192)

        /// The largest limits accepted from a file (so a tampered header cannot ask for a terabyte).
        public static let maximum = Limits(operations: 64, memoryBytes: 4 << 30)

        /// Whether neither the passes nor the memory exceed `ceiling`'s.
        public func fits(within ceiling: Limits) -> Bool {
            operations <= ceiling.operations && memoryBytes <= ceiling.memoryBytes
        }

        /// Whether libsodium accepts these limits and they are within `maximum`.
        public var isValid: Bool {
            operations >= Limits.minimum.operations && operations <= Limits.maximum.operations
                && memoryBytes >= Limits.minimum.memoryBytes && memoryBytes <= Limits.maximum.memoryBytes
        }
    }

    /// The salt size: 16 bytes.
    package static let saltByteCount = 16

    /// Derives a key. Throws `invalidArgument` for a bad salt or limits, and `allocationFailed` when
    /// the memory limit cannot be met.
    package static func deriveKey(passphrase: SecureBytes, salt: [UInt8], limits: Limits) throws(CryptoError)
        -> SymmetricKey
    {
        try Sodium.ensureInitialized()
        guard salt.count == saltByteCount else {
            throw CryptoError(.invalidArgument, "an Argon2id salt is \(saltByteCount) bytes, not \(salt.count)")
        }
        guard limits.isValid else {
            throw CryptoError(
                .invalidArgument,
                "Argon2id limits \(limits.operations) passes / \(limits.memoryBytes) bytes are outside what vault accepts"
            )
        }
        let key: SecureBytes
        do {
            // Argon2id takes seconds: in an allocation of its own, so that no shared page stays writable.
            key = try SecureBytes(exactly: SymmetricKey.byteCount, sharingAPage: false) { (out) throws(CryptoError) in
                let status = passphrase.withUnsafeBytes { phrase in
                    // libsodium wants a non-null pointer even for an empty passphrase.
                    let empty: CChar = 0
                    return withUnsafePointer(to: empty) { emptyPointer in
                        crypto_pwhash(
                            out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                            phrase.count > 0 ? phrase.baseAddress!.assumingMemoryBound(to: CChar.self) : emptyPointer,
                            UInt64(phrase.count), salt, limits.operations, Int(limits.memoryBytes),
                            crypto_pwhash_ALG_ARGON2ID13)
                    }
                }
                guard status == 0 else {
                    throw CryptoError(
                        .allocationFailed,
                        "Argon2id could not run with \(limits.memoryBytes >> 20) MiB of memory (out of memory?)")
                }
            }
        } catch {
            throw error.cryptoError
        }
        return try SymmetricKey(key)
    }
}
