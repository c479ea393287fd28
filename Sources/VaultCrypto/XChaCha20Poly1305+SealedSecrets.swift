/// Secrets sealed under subkeys, opened together: the subkeys and the plaintexts in one secure
/// allocation, where one `open` and one `KeyDerivation.subkey` each would make two per secret (a
/// dozen system calls each).
extension XChaCha20Poly1305 {
    /// A box that `openSecrets(_:)` opens: a ciphertext (followed by its tag) sealed with `nonce` and
    /// `associatedData` under the key that a derivation makes.
    package struct SealedSecret: Sendable {
        let ciphertext: ArraySlice<UInt8>
        let nonce: ArraySlice<UInt8>
        let associatedData: [UInt8]
        let key: KeyDerivation.Derivation

        /// The box of `ciphertext` sealed with `nonce` and `associatedData` under the key that `key`
        /// makes (a derivation of a key at hand, not `ofEarlier`).
        package init(
            ciphertext: ArraySlice<UInt8>, nonce: ArraySlice<UInt8>, associatedData: [UInt8],
            sealedUnder key: KeyDerivation.Derivation
        ) {
            self.ciphertext = ciphertext
            self.nonce = nonce
            self.associatedData = associatedData
            self.key = key
        }
    }

    /// Why `openSecrets(_:)` failed: the box at `index` (nil when no one box failed: no secure memory),
    /// and how (`authenticationFailed` for a damaged box or one sealed under another key).
    package struct SealedSecretFailure: Error, Sendable {
        /// The position of the box that failed, nil for a failure of the whole (no memory).
        package let index: Int?
        /// The failure.
        package let error: CryptoError
    }

    /// The plaintexts of `secrets`, in order, each opened under the key its derivation makes. One secure
    /// allocation holds them all, and the subkeys while they are used (wiped before this returns): each
    /// plaintext is a view of it, so they are wiped and freed together when the last of them goes, and
    /// only secrets that live as long as each other belong in one call. Nothing is returned unless
    /// every box opens.
    package static func openSecrets(_ secrets: [SealedSecret]) throws(SealedSecretFailure) -> [SecureBytes] {
        do {
            try Sodium.ensureInitialized()
        } catch {
            throw SealedSecretFailure(index: nil, error: error)
        }
        var sizes: [Int] = []
        sizes.reserveCapacity(secrets.count)
        for (index, secret) in secrets.enumerated() {
            do throws(CryptoError) {
                guard case .key = secret.key.key else {
                    throw CryptoError(.invalidArgument, "a sealed secret's key derives from a key at hand")
                }
                sizes.append(try plaintextCount(secret.ciphertext.count, nonceByteCount: secret.nonce.count))
            } catch {
                throw SealedSecretFailure(index: index, error: error)
            }
        }
        let plaintextBytes = sizes.reduce(0, +)
        let scratchBytes = keyByteCount + secrets.reduce(0) { max($0, $1.key.scratchByteCount) }
        let bytes: SecureBytes
        do throws(SecureFillError<SealedSecretFailure>) {
            bytes = try SecureBytes(exactly: plaintextBytes + scratchBytes) { (out) throws(SealedSecretFailure) in
                let key = UnsafeMutableRawBufferPointer(rebasing: out[plaintextBytes..<(plaintextBytes + keyByteCount)])
                let scratch = UnsafeMutableRawBufferPointer(rebasing: out[(plaintextBytes + keyByteCount)...])
                defer { Wiping.wipe(UnsafeMutableRawBufferPointer(rebasing: out[plaintextBytes...])) }
                var offset = 0
                for (index, secret) in secrets.enumerated() {
                    let target = UnsafeMutableRawBufferPointer(rebasing: out[offset..<(offset + sizes[index])])
                    do throws(CryptoError) {
                        guard case .key(let sealing) = secret.key.key else { preconditionFailure("checked above") }
                        try sealing.withUnsafeBytes { (sealing) throws(CryptoError) in
                            try secret.key.write(into: key, keyedBy: sealing, scratch: scratch)
                        }
                        try secret.ciphertext.withTypedBytes { (ciphertext) throws(CryptoError) in
                            try secret.nonce.withTypedBytes { (nonce) throws(CryptoError) in
                                try decrypt(
                                    ciphertext, into: target, keyBytes: UnsafeRawBufferPointer(key), nonce: nonce,
                                    associatedData: secret.associatedData)
                            }
                        }
                    } catch {
                        throw SealedSecretFailure(index: index, error: error)
                    }
                    offset += sizes[index]
                }
            }
        } catch {
            switch error {
            case .allocation(let error): throw SealedSecretFailure(index: nil, error: error)
            case .filling(let failure): throw failure
            }
        }
        return bytes.views(ofSizes: sizes)
    }
}
