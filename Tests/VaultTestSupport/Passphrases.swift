import VaultCrypto
import VaultStore

extension KeySource {
    /// A key source whose passphrase provider always answers `bytes` (at the cheapest Argon2id cost
    /// for new keys, unless `limits` says otherwise).
    package static func passphrase(
        _ bytes: [UInt8], limits: PassphraseKeyDerivation.Limits = .minimum
    ) -> KeySource {
        KeySource(passphrase: { (_) throws(StoreError) in try secureBytes(bytes) }, limits: limits)
    }

    /// A key source whose passphrase provider always answers the UTF-8 bytes of `text`.
    package static func passphrase(_ text: String, limits: PassphraseKeyDerivation.Limits = .minimum) -> KeySource {
        passphrase(Array(text.utf8), limits: limits)
    }
}

/// `bytes` in secure memory, as a passphrase provider answers them.
package func secureBytes(_ bytes: [UInt8]) throws(StoreError) -> SecureBytes {
    do {
        return try SecureBytes(copying: bytes)
    } catch {
        throw StoreError(.cryptoUnavailable, error.message)
    }
}
