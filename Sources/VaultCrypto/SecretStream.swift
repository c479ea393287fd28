internal import CSodium

/// libsodium's `crypto_secretstream_xchacha20poly1305`: a sequence of messages under one key, each
/// authenticated and chained to the ones before it, the last marked final, so that a reader can open a
/// long stream one message at a time and still learn of a message dropped, reordered, repeated or cut
/// off at the end. The state holds a key: it lives in secure memory and is wiped when the stream goes.
package enum SecretStream {
    /// The bytes of the header that starts a stream (its random nonce).
    package static let headerByteCount = Int(crypto_secretstream_xchacha20poly1305_headerbytes())
    /// The bytes a message grows by when sealed.
    package static let overheadByteCount = Int(crypto_secretstream_xchacha20poly1305_abytes())

    /// Secure memory for one stream's state.
    final class State {
        let pointer: UnsafeMutablePointer<crypto_secretstream_xchacha20poly1305_state>

        init() throws(CryptoError) {
            let raw = try SecureAllocation.allocate(
                byteCount: MemoryLayout<crypto_secretstream_xchacha20poly1305_state>.size)
            pointer = raw.bindMemory(to: crypto_secretstream_xchacha20poly1305_state.self, capacity: 1)
        }

        deinit { SecureAllocation.free(UnsafeMutableRawPointer(pointer)) }
    }

    /// Seals the messages of a new stream in order.
    package final class Writer {
        let state: State
        /// The stream's header, to store before its first message.
        package let header: [UInt8]

        /// A new stream under `key`, with a fresh random header.
        package init(key: SymmetricKey) throws(CryptoError) {
            let state = try State()
            var header = [UInt8](repeating: 0, count: SecretStream.headerByteCount)
            let status = key.withUnsafeBytes { keyBytes in
                crypto_secretstream_xchacha20poly1305_init_push(
                    state.pointer, &header, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            self.state = state
            guard status == 0 else { throw CryptoError(.invalidArgument, "cannot start a secret stream") }
            self.header = header
        }

        /// Seals `message` (with `associatedData` authenticated, not stored) as the stream's next message,
        /// the last one when `isFinal`.
        package func seal(_ message: UnsafeRawBufferPointer, associatedData: [UInt8] = [], isFinal: Bool = false)
            throws(CryptoError) -> [UInt8]
        {
            var sealed = [UInt8](repeating: 0, count: message.count + SecretStream.overheadByteCount)
            let tag = UInt8(
                isFinal
                    ? crypto_secretstream_xchacha20poly1305_tag_final()
                    : crypto_secretstream_xchacha20poly1305_tag_message())
            let status = associatedData.withUnsafeBufferPointer { ad in
                crypto_secretstream_xchacha20poly1305_push(
                    state.pointer, &sealed, nil, message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                    UInt64(message.count), ad.baseAddress, UInt64(ad.count), tag)
            }
            guard status == 0 else { throw CryptoError(.invalidArgument, "cannot seal a message of a secret stream") }
            return sealed
        }

        /// `seal` of an array's bytes.
        package func seal(_ message: [UInt8], associatedData: [UInt8] = [], isFinal: Bool = false)
            throws(CryptoError) -> [UInt8]
        {
            let sealed = message.withUnsafeBytes { bytes in
                Result { () throws(CryptoError) in try seal(bytes, associatedData: associatedData, isFinal: isFinal) }
            }
            return try sealed.get()
        }
    }

    /// Opens the messages of a stream in order.
    package final class Reader {
        let state: State

        /// The stream under `key` that `header` starts.
        package init(key: SymmetricKey, header: [UInt8]) throws(CryptoError) {
            guard header.count == SecretStream.headerByteCount else {
                throw CryptoError(.invalidArgument, "a secret stream's header is \(SecretStream.headerByteCount) bytes")
            }
            let state = try State()
            let status = key.withUnsafeBytes { keyBytes in
                crypto_secretstream_xchacha20poly1305_init_pull(
                    state.pointer, header, keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
            self.state = state
            guard status == 0 else { throw CryptoError(.authenticationFailed, "the secret stream's header is invalid") }
        }

        /// Opens the stream's next message `sealed` into secure memory, and whether it is the last one.
        /// A message that does not authenticate (under this key, at this place in the stream, with
        /// `associatedData`) is `authenticationFailed`; the stream cannot go on after it.
        package func open(_ sealed: [UInt8], associatedData: [UInt8] = []) throws(CryptoError)
            -> (message: SecureBytes, isFinal: Bool)
        {
            guard sealed.count >= SecretStream.overheadByteCount else {
                throw CryptoError(.authenticationFailed, "a message of a secret stream is too short")
            }
            var tag: UInt8 = 0
            let message: SecureBytes
            do {
                message = try SecureBytes(exactly: sealed.count - SecretStream.overheadByteCount) {
                    (out) throws(CryptoError) in
                    let status = associatedData.withUnsafeBufferPointer { ad in
                        crypto_secretstream_xchacha20poly1305_pull(
                            state.pointer, out.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, &tag, sealed,
                            UInt64(sealed.count), ad.baseAddress, UInt64(ad.count))
                    }
                    guard status == 0 else {
                        throw CryptoError(.authenticationFailed, "a message of the secret stream does not authenticate")
                    }
                }
            } catch {
                throw error.cryptoError
            }
            return (message, tag == UInt8(crypto_secretstream_xchacha20poly1305_tag_final()))
        }
    }
}

/// Keyed BLAKE2b over bytes that come in parts (`KeyDerivation.keyedHash` of their concatenation).
package final class StreamingHash {
    let state: UnsafeMutableRawPointer
    let outputByteCount: Int

    /// A hash under `key` with personalisation `domain`, of `outputByteCount` (16 to 64) bytes.
    package init(key: SymmetricKey, domain: KeyDerivation.Domain, outputByteCount: Int) throws(CryptoError) {
        guard (16...64).contains(outputByteCount) else {
            throw CryptoError(.invalidArgument, "BLAKE2b output must be 16 to 64 bytes")
        }
        try Sodium.ensureInitialized()
        self.outputByteCount = outputByteCount
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_blake2b_statebytes(), alignment: 64)
        let salt = [UInt8](repeating: 0, count: 16)
        let status = key.withUnsafeBytes { keyBytes in
            crypto_generichash_blake2b_init_salt_personal(
                OpaquePointer(state),
                keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count, outputByteCount, salt,
                domain.personal)
        }
        // On a failure the state is let go by deinit (the object is whole by now).
        guard status == 0 else { throw CryptoError(.invalidArgument, "BLAKE2b failed") }
    }

    deinit {
        sodium_memzero(state, crypto_generichash_blake2b_statebytes())
        state.deallocate()
    }

    /// Adds `bytes`.
    package func update(_ bytes: [UInt8]) {
        _ = crypto_generichash_blake2b_update(
            OpaquePointer(state), bytes, UInt64(bytes.count))
    }

    /// The hash of everything added.
    package func finish() -> [UInt8] {
        var output = [UInt8](repeating: 0, count: outputByteCount)
        _ = crypto_generichash_blake2b_final(
            OpaquePointer(state), &output, outputByteCount)
        return output
    }
}
