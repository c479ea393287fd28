import VaultCrypto
import VaultSystem

/// A `master.key` that holds the master key sealed under a passphrase: a `PassphraseEnvelope` with
/// magic "VLTK" around the 32 key bytes (124 bytes in all).
enum WrappedMasterKey {
    static let envelope = PassphraseEnvelope(magic: Array("VLTK".utf8), what: "a passphrase-wrapped key file")
    static let byteCount = PassphraseEnvelope.overheadByteCount + SymmetricKey.byteCount
    static let checksumDomain = PassphraseEnvelope.checksumDomain

    static func isWrapped(_ bytes: [UInt8]) -> Bool { envelope.isSealed(bytes) }

    static func wrap(
        _ masterKey: SymmetricKey, passphrase: SecureBytes, limits: PassphraseKeyDerivation.Limits
    ) throws(StoreError) -> [UInt8] {
        try envelope.seal(masterKey.bytes, key: .passphrase(passphrase, limits: limits))
    }

    /// Checks a wrapped key without its passphrase (size, checksum, header, cost within `ceiling`).
    static func check(_ bytes: [UInt8], path: FilePath, ceiling: PassphraseKeyDerivation.Limits) throws(StoreError) {
        guard bytes.count == byteCount else {
            throw StoreError(
                .integrity, "\(path) is \(bytes.count) bytes; a passphrase-wrapped key file is \(byteCount)",
                path: path.string)
        }
        try envelope.check(bytes, path: path.string, ceiling: ceiling)
    }

    static func unwrap(
        _ bytes: [UInt8], passphrase: SecureBytes, path: FilePath, ceiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(StoreError) -> SymmetricKey {
        try check(bytes, path: path, ceiling: ceiling)
        let key = try envelope.open(
            bytes, key: .passphrase(passphrase, limits: .minimum), path: path.string, ceiling: ceiling)
        guard key.count == SymmetricKey.byteCount else {
            throw StoreError(.integrity, "\(path) does not hold a 32-byte key", path: path.string)
        }
        return try KeyFile.key(key, path: path)
    }
}
