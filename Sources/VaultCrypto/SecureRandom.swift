internal import CSodium

/// Random bytes from the system's CSPRNG, for values that are not secret (vault ids, persistent ids,
/// nonces). Secret random bytes come from `SecureBytes.random(count:)`.
package enum SecureRandom {
    /// `count` random bytes.
    package static func bytes(count: Int) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialized()
        var result = [UInt8](repeating: 0, count: count)
        if count > 0 { result.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, count) } }
        return result
    }
}
