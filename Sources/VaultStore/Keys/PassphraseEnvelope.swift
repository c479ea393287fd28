import VaultCrypto

/// Bytes sealed under a passphrase or a raw key, the format shared by a wrapped `master.key` ("VLTK",
/// passphrase only) and a backup ("VLTX"):
///
///     header     = magic (4) | version u8 (1) | kdf u8 | aead u8 (1 = XChaCha20-Poly1305)
///                  | reserved u8 (0) | operations u32be | memory bytes u64be | salt (16) | nonce (24)
///     ciphertext = AEAD(key, nonce, payload, ad = header)
///     checksum   = BLAKE2b-128 of header || ciphertext (personalisation "vault.mkey.sum.1", a fixed key)
///
/// Backups are also written as version 2 (cipher 2): the last 24 bytes of the header start a secret
/// stream, and the ciphertext is its frames (`BackupStream`, docs/FORMAT.md "Backups").
///
/// kdf 1: key = Argon2id v1.3(passphrase, salt, operations, memory). kdf 2 (backups only): key = keyed
/// BLAKE2b-256 of the salt under the 32 raw bytes of a key file (personalisation "vault.backup.key"),
/// no Argon2id, operations and memory 0: for unattended backups, where a key file takes the place of
/// a passphrase typed by no one. The AEAD authenticates the header (kdf, limits, salt), so a lowered
/// cost cannot be slipped in; the checksum, which is not a MAC, tells damage apart from a wrong key.
struct PassphraseEnvelope {
    static let headerByteCount = 60
    static let checksumByteCount = 16
    static let overheadByteCount = headerByteCount + XChaCha20Poly1305.tagByteCount + checksumByteCount
    static let checksumDomain = KeyDerivation.Domain("vault.mkey.sum.1")
    static let rawKeyDomain = KeyDerivation.Domain("vault.backup.key")
    static let argon2id: UInt8 = 1
    static let rawKey: UInt8 = 2

    let magic: [UInt8]
    /// What the sealed thing is called in messages ("the key file", "the backup").
    let what: String
    /// Whether kdf 2 (a raw key) is accepted: for backups, never for a wrapped `master.key`.
    var acceptsRawKey = false
    /// The version of the envelope whose payload is a secret stream of messages (`BackupStream`), where
    /// there is one: backups only.
    var streamVersion: UInt8? = nil

    /// What seals (or opens) an envelope.
    enum Key {
        /// A passphrase, through Argon2id at `limits` (when sealing; opening uses the header's).
        case passphrase(SecureBytes, limits: PassphraseKeyDerivation.Limits)
        /// The 32 bytes of a key file.
        case raw(SymmetricKey)
    }

    func isSealed(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && Array(bytes[0..<4]) == magic
    }

    /// Seals the secret `payload` (a key) under `sealing`: the envelope's bytes.
    func seal(_ payload: SecureBytes, key sealing: Key) throws(StoreError) -> [UInt8] {
        try seal(sealing) { (key, nonce, header) throws(CryptoError) in
            try XChaCha20Poly1305.seal(payload, key: key, nonce: nonce, associatedData: header)
        }
    }

    /// Seals `payload` (a backup's archive) under `sealing`: the envelope's bytes.
    func seal(_ payload: [UInt8], key sealing: Key) throws(StoreError) -> [UInt8] {
        try seal(sealing) { (key, nonce, header) throws(CryptoError) in
            try XChaCha20Poly1305.seal(payload, key: key, nonce: nonce, associatedData: header)
        }
    }

    /// The envelope around what `encrypt` makes of the payload under the derived key, nonce and header.
    private func seal(
        _ sealing: Key, encrypt: (SymmetricKey, [UInt8], [UInt8]) throws(CryptoError) -> [UInt8]
    ) throws(StoreError) -> [UInt8] {
        if case .raw = sealing, !acceptsRawKey {
            throw StoreError(.invalidName, "\(what) is sealed under a passphrase only, never a key file")
        }
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            var (header, key) = try headerPrefix(sealing, version: 1, cipher: 1)
            header += nonce
            let body = header + (try encrypt(key, nonce, header))
            return body + (try Self.checksum(body))
        } catch {
            throw StoreError.crypto(error, "cannot seal \(what)")
        }
    }

    /// The first 36 bytes of a header for `sealing` (magic, version, kdf, cipher, cost, a fresh salt) and
    /// the key it derives: what comes after them (24 bytes: a nonce, or a secret stream's header) is the
    /// caller's.
    func headerPrefix(_ sealing: Key, version: UInt8, cipher: UInt8) throws(CryptoError) -> ([UInt8], SymmetricKey) {
        let salt = try SecureRandom.bytes(count: PassphraseKeyDerivation.saltByteCount)
        var header = magic
        let key: SymmetricKey
        switch sealing {
        case .passphrase(let passphrase, let limits):
            header += [version, Self.argon2id, cipher, 0]
            header.appendBigEndian(UInt32(truncatingIfNeeded: limits.operations))
            header.appendBigEndian(limits.memoryBytes)
            key = try PassphraseKeyDerivation.deriveKey(passphrase: passphrase, salt: salt, limits: limits)
        case .raw(let raw):
            header += [version, Self.rawKey, cipher, 0] + [UInt8](repeating: 0, count: 12)
            key = try KeyDerivation.subkey(of: raw, domain: Self.rawKeyDomain, context: salt)
        }
        return (header + salt, key)
    }

    /// Checks what can be checked without the passphrase or key: magic, version, algorithms, and that
    /// the Argon2id cost it asks for is valid and within `ceiling` (a file that asks for 4 GiB and a
    /// minute per open is refused before any work). Needs the header only: `bytes` may be a prefix.
    /// Returns the kdf byte (`argon2id` or, where accepted, `rawKey`).
    @discardableResult
    func checkHeader(_ bytes: [UInt8], path: String, ceiling: PassphraseKeyDerivation.Limits) throws(StoreError)
        -> UInt8
    {
        guard bytes.count >= Self.headerByteCount, isSealed(bytes) else {
            throw StoreError(.integrity, "\(path) is not \(what) (bad magic or too short)", path: path)
        }
        let newest: UInt8 = streamVersion ?? 1
        guard (1...newest).contains(bytes[4]) else {
            throw StoreError(
                .unsupportedFormat,
                "\(path) has version \(bytes[4]); this build reads version\(newest == 1 ? "" : "s 1 and") \(newest)",
                path: path)
        }
        let kdf = bytes[5]
        // Version 1 seals one message (cipher 1); the stream version, messages in a secret stream (cipher 2).
        let cipher: UInt8 = bytes[4] == 1 ? 1 : 2
        guard kdf == Self.argon2id || (kdf == Self.rawKey && acceptsRawKey), bytes[6] == cipher, bytes[7] == 0 else {
            throw StoreError(.unsupportedFormat, "\(path) names an unknown key derivation or cipher", path: path)
        }
        if kdf == Self.rawKey {
            guard bytes[8..<20].allSatisfy({ $0 == 0 }) else {
                throw StoreError(
                    .integrity, "\(path) is sealed under a key file but names an Argon2id cost; it is damaged",
                    path: path)
            }
            return kdf
        }
        let limits = Self.limits(bytes)
        guard limits.isValid else {
            throw StoreError(.integrity, "\(path) asks for Argon2id limits outside what vault accepts", path: path)
        }
        guard limits.fits(within: ceiling) else {
            throw StoreError(
                .invalidName,
                "\(path) asks for an Argon2id cost of \(limits.operations) passes over \(limits.memoryBytes >> 20) MiB, "
                    + "more than the ceiling of \(ceiling.operations) passes over \(ceiling.memoryBytes >> 20) MiB; "
                    + "refused before any work (raise the ceiling only for a file you made yourself)",
                path: path)
        }
        return kdf
    }

    static func limits(_ bytes: [UInt8]) -> PassphraseKeyDerivation.Limits {
        PassphraseKeyDerivation.Limits(
            operations: UInt64(bigEndianBytes: bytes[8..<12]), memoryBytes: UInt64(bigEndianBytes: bytes[12..<20]))
    }

    /// Checks everything but the passphrase or key: magic, size, checksum (damage is reported as
    /// damage), then the header (`checkHeader`). Returns the body without the checksum.
    @discardableResult
    func check(_ bytes: [UInt8], path: String, ceiling: PassphraseKeyDerivation.Limits) throws(StoreError)
        -> [UInt8]
    {
        guard bytes.count >= Self.overheadByteCount, isSealed(bytes) else {
            throw StoreError(.integrity, "\(path) is not \(what) (bad magic or too short)", path: path)
        }
        let body = Array(bytes[0..<(bytes.count - Self.checksumByteCount)])
        let sum: [UInt8]
        do {
            sum = try Self.checksum(body)
        } catch {
            throw StoreError.crypto(error, "cannot check \(path)")
        }
        guard sum == Array(bytes[(bytes.count - Self.checksumByteCount)...]) else {
            throw StoreError(
                .integrity, "\(path) is damaged (its checksum does not match); restore it from a backup", path: path)
        }
        try checkHeader(bytes, path: path, ceiling: ceiling)
        return body
    }

    /// Opens the envelope with `opening`, which must be of the kind its header names (a passphrase for
    /// kdf 1, a key file for kdf 2); the limits of a passphrase are the header's, not the key's.
    func open(
        _ bytes: [UInt8], key opening: Key, path: String, ceiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(StoreError) -> SecureBytes {
        let body = try check(bytes, path: path, ceiling: ceiling)
        let header = Array(bytes[0..<Self.headerByteCount])
        let nonce = Array(bytes[36..<60])
        let (key, wrongKey) = try Self.key(opening, header: header, path: path)
        do {
            return try XChaCha20Poly1305.open(
                body, from: Self.headerByteCount, key: key, nonce: nonce, associatedData: header)
        } catch {
            throw StoreError(.wrongPassphrase, wrongKey, path: path)
        }
    }

    /// The key that `opening` derives for the envelope whose header is `header` (its kdf, limits and
    /// salt), and what to say when that key does not open it. `opening` must be of the kind the header
    /// names: a passphrase for kdf 1, a key file for kdf 2.
    static func key(_ opening: Key, header: [UInt8], path: String) throws(StoreError) -> (SymmetricKey, String) {
        let salt = Array(header[20..<36])
        switch (opening, header[5]) {
        case (.passphrase(let passphrase, _), Self.argon2id):
            do {
                let key = try PassphraseKeyDerivation.deriveKey(
                    passphrase: passphrase, salt: salt, limits: Self.limits(header))
                return (key, "wrong passphrase for \(path)")
            } catch {
                throw StoreError.crypto(error, "cannot derive the key of \(path)")
            }
        case (.raw(let raw), Self.rawKey):
            do {
                let key = try KeyDerivation.subkey(of: raw, domain: Self.rawKeyDomain, context: salt)
                return (key, "the key file given does not open \(path): it was sealed under another key file")
            } catch {
                throw StoreError.crypto(error, "cannot derive the key of \(path)")
            }
        case (.passphrase, _):
            throw StoreError(
                .invalidName, "\(path) is sealed under a key file, not a passphrase; give that key file", path: path)
        case (.raw, _):
            throw StoreError(
                .invalidName, "\(path) is sealed under a passphrase, not a key file; give that passphrase", path: path)
        }
    }

    static func checksum(_ body: [UInt8]) throws(CryptoError) -> [UInt8] {
        try KeyDerivation.keyedHash(
            body, key: try SymmetricKey.zero(), domain: checksumDomain, outputByteCount: checksumByteCount)
    }
}
