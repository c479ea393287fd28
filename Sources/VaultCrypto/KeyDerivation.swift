internal import CSodium

/// Keyed BLAKE2b (`crypto_generichash_blake2b_salt_personal`) for subkeys and keyed hashes. The
/// 16-byte personalisation string separates domains: the same master key and the same input give
/// unrelated outputs for different purposes.
package enum KeyDerivation {
    /// A domain label, at most 16 bytes of ASCII; padded with zeros to BLAKE2b's 16-byte
    /// personalisation.
    package struct Domain: Sendable, Hashable {
        let personal: [UInt8]

        /// A label such as "vault.enc.v1". Traps if longer than 16 bytes: labels are constants in code.
        package init(_ label: StaticString) {
            let bytes = label.withUTF8Buffer { Array($0) }
            precondition(bytes.count <= 16, "a BLAKE2b personalisation label is at most 16 bytes")
            personal = bytes + [UInt8](repeating: 0, count: 16 - bytes.count)
        }
    }

    /// Derives a subkey of `key` for `domain` and `context` (e.g. a group name).
    package static func subkey(of key: SymmetricKey, domain: Domain, context: [UInt8]) throws(CryptoError)
        -> SymmetricKey
    {
        try context.withTypedBytes { (input) throws(CryptoError) in try derive(key, domain, input) }
    }

    /// Derives a subkey of `key` for `domain` and `context` that also depends on the secret `other`
    /// (e.g. a class key and a group key: the result needs both): BLAKE2b keyed with `key` over
    /// `other`'s bytes followed by `context`, the message kept in secure memory.
    package static func subkey(of key: SymmetricKey, domain: Domain, context: [UInt8], mixing other: SymmetricKey)
        throws(CryptoError) -> SymmetricKey
    {
        try subkeys([Derivation(of: key, domain: domain, context: context, mixing: other)])[0]
    }

    /// The subkey that `derivation` makes (of a key at hand, not `ofEarlier`).
    package static func subkey(_ derivation: Derivation) throws(CryptoError) -> SymmetricKey {
        try subkeys([derivation])[0]
    }

    /// One subkey of `subkeys(_:)`: of `key` for `domain` and `context`, also depending on the secret
    /// `mixing` when it is given (as `subkey(of:domain:context:mixing:)`).
    package struct Derivation: Sendable {
        enum Key: Sendable {
            case key(SymmetricKey)
            /// The key that derivation `index` of the same `subkeys` call makes.
            case earlier(Int)
        }

        let key: Key
        let domain: Domain
        let context: [UInt8]
        let mixing: SymmetricKey?

        /// The subkey of `key` for `domain` and `context`, mixing in `other` when given.
        package init(of key: SymmetricKey, domain: Domain, context: [UInt8], mixing other: SymmetricKey? = nil) {
            self.key = .key(key)
            self.domain = domain
            self.context = context
            self.mixing = other
        }

        /// The subkey for `domain` and `context` of the key that derivation `index` of the same
        /// `subkeys` call makes (an earlier one): a chain of keys in one allocation.
        package init(ofEarlier index: Int, domain: Domain, context: [UInt8]) {
            self.key = .earlier(index)
            self.domain = domain
            self.context = context
            self.mixing = nil
        }

        /// The secure scratch bytes a mixed derivation builds its message in (`other`'s bytes, then the
        /// context); none for an unmixed one, whose message is its context.
        var scratchByteCount: Int { mixing.map { $0.bytes.count + context.count } ?? 0 }

        /// Writes the key into `target`, keyed by `key`; a mixed derivation's message is built in
        /// `scratch` (at least `scratchByteCount` bytes), which the caller wipes.
        func write(
            into target: UnsafeMutableRawBufferPointer, keyedBy key: UnsafeRawBufferPointer,
            scratch: UnsafeMutableRawBufferPointer
        ) throws(CryptoError) {
            precondition(target.count == SymmetricKey.byteCount, "a derived key is 32 bytes")
            precondition(scratch.count >= scratchByteCount, "scratch too small for a mixed message")
            guard let other = mixing else {
                try context.withTypedBytes { (message) throws(CryptoError) in
                    try hash(into: target, key: key, domain: domain, message: message)
                }
                return
            }
            let message = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<scratchByteCount])
            let otherCount = other.bytes.count
            other.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: message[0..<otherCount]).copyMemory(from: $0)
            }
            context.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: message[otherCount...]).copyMemory(from: $0)
            }
            try hash(into: target, key: key, domain: domain, message: UnsafeRawBufferPointer(message))
        }
    }

    /// The subkeys `derivations` ask for, in order: the same keys as one `subkey` call each, in one
    /// secure allocation (the keys share it: it is wiped when the last of them goes). A mixed
    /// derivation's message is built in a scratch tail of the same allocation, wiped before the keys
    /// are handed out.
    package static func subkeys(_ derivations: [Derivation]) throws(CryptoError) -> [SymmetricKey] {
        guard !derivations.isEmpty else {
            try Sodium.ensureInitialized()
            return []
        }
        do {
            return try make(seeded: false, seed: { (_: inout MutableRawSpan) throws(Never) in 0 }, derivations)
        } catch {
            switch error {
            case .crypto(let error): throw error
            case .seed(let never): switch never {}
            }
        }
    }

    /// A key that `fill` writes (a key file's bytes), then the subkeys `derivations` ask for, all in
    /// one secure allocation: the key is first, and `Derivation(ofEarlier: 0, …)` is keyed by it
    /// (`ofEarlier: i` by the key at `i`). `fill` returns how many bytes it wrote: anything but all
    /// `SymmetricKey.byteCount` is `invalidArgument`, and no key is made of a partly written one.
    package static func key<Failure: Error>(
        filledBy fill: (inout MutableRawSpan) throws(Failure) -> Int, thenDeriving derivations: [Derivation]
    ) throws(SeededKeyError<Failure>) -> [SymmetricKey] {
        try make(seeded: true, seed: fill, derivations)
    }

    /// Why `key(filledBy:thenDeriving:)` failed: no memory or a derivation, or the fill.
    package enum SeededKeyError<Failure: Error>: Error {
        /// The allocation or a derivation failed.
        case crypto(CryptoError)
        /// The fill threw.
        case seed(Failure)
    }

    /// The keys of `subkeys` and `key(filledBy:thenDeriving:)`: when `seeded`, `seed` writes the first.
    /// One secure allocation: the keys, then a scratch area where mixed messages are built, wiped
    /// before the keys are handed out.
    private static func make<Failure: Error>(
        seeded: Bool, seed: (inout MutableRawSpan) throws(Failure) -> Int, _ derivations: [Derivation]
    ) throws(SeededKeyError<Failure>) -> [SymmetricKey] {
        do {
            try Sodium.ensureInitialized()
        } catch {
            throw .crypto(error)
        }
        let size = SymmetricKey.byteCount
        let first = seeded ? 1 : 0
        let keyBytes = size * (first + derivations.count)
        let scratchBytes = derivations.reduce(0) { max($0, $1.scratchByteCount) }
        let bytes: SecureBytes
        do throws(SecureFillError<SeededKeyError<Failure>>) {
            bytes = try SecureBytes(exactly: keyBytes + scratchBytes) { (out) throws(SeededKeyError<Failure>) in
                let scratch = UnsafeMutableRawBufferPointer(rebasing: out[keyBytes...])
                defer { Wiping.wipe(scratch) }
                if seeded {
                    var span = MutableRawSpan(_unsafeBytes: UnsafeMutableRawBufferPointer(rebasing: out[0..<size]))
                    let written: Int
                    do throws(Failure) {
                        written = try seed(&span)
                    } catch {
                        throw .seed(error)
                    }
                    guard written == size else {
                        throw .crypto(
                            CryptoError(.invalidArgument, "a key was filled with \(written) of its \(size) bytes"))
                    }
                }
                for (position, derivation) in derivations.enumerated() {
                    let index = first + position
                    let target = UnsafeMutableRawBufferPointer(rebasing: out[index * size..<(index + 1) * size])
                    do throws(CryptoError) {
                        switch derivation.key {
                        case .key(let key):
                            try key.withUnsafeBytes { (key) throws(CryptoError) in
                                try derivation.write(into: target, keyedBy: key, scratch: scratch)
                            }
                        case .earlier(let earlier):
                            guard earlier >= 0 && earlier < index else {
                                throw CryptoError(.invalidArgument, "a derivation is keyed by one that comes before it")
                            }
                            let key = UnsafeRawBufferPointer(rebasing: out[earlier * size..<(earlier + 1) * size])
                            try derivation.write(into: target, keyedBy: key, scratch: scratch)
                        }
                    } catch {
                        throw .crypto(error)
                    }
                }
            }
        } catch {
            switch error {
            case .allocation(let error): throw .crypto(error)
            case .filling(let error): throw error
            }
        }
        var keys: [SymmetricKey] = []
        keys.reserveCapacity(first + derivations.count)
        for part in bytes.views(ofSizes: Array(repeating: size, count: first + derivations.count)) {
            do {
                keys.append(try SymmetricKey(part))
            } catch {
                throw .crypto(error)
            }
        }
        return keys
    }

    /// The one derivation: a 32-byte BLAKE2b of `message` under `key` for `domain`, in secure memory.
    private static func derive(_ key: SymmetricKey, _ domain: Domain, _ message: UnsafeRawBufferPointer)
        throws(CryptoError) -> SymmetricKey
    {
        try Sodium.ensureInitialized()
        let bytes: SecureBytes
        do {
            bytes = try SecureBytes(exactly: SymmetricKey.byteCount) { (out) throws(CryptoError) in
                try hash(into: out, key: key, domain: domain, message: message)
            }
        } catch {
            throw error.cryptoError
        }
        return try SymmetricKey(bytes)
    }

    /// A keyed hash for `domain`, `outputByteCount` bytes (16...64), of `parts` one after the other,
    /// under the key that `key` makes (a derivation of a key at hand, not `ofEarlier`). The key and
    /// the message are built in one secure allocation, wiped and freed before this returns: a MAC over
    /// secrets under a subkey, without a secure allocation for each.
    package static func keyedHash(
        _ parts: [PlainOrSecretBytes], keyedBy key: Derivation, domain: Domain, outputByteCount: Int = 32
    ) throws(CryptoError) -> [UInt8] {
        guard case .key(let root) = key.key else {
            throw CryptoError(.invalidArgument, "a keyed hash's key derives from a key at hand")
        }
        try Sodium.ensureInitialized()
        let size = SymmetricKey.byteCount
        let messageStart = size + key.scratchByteCount
        let messageCount = parts.reduce(0) { $0 + $1.count }
        var output = [UInt8](repeating: 0, count: outputByteCount)
        do throws(SecureFillError<CryptoError>) {
            _ = try SecureBytes(exactly: messageStart + messageCount) { (memory) throws(CryptoError) in
                defer { Wiping.wipe(memory) }
                let subkey = UnsafeMutableRawBufferPointer(rebasing: memory[0..<size])
                try root.withUnsafeBytes { (root) throws(CryptoError) in
                    try key.write(
                        into: subkey, keyedBy: root,
                        scratch: UnsafeMutableRawBufferPointer(rebasing: memory[size..<messageStart]))
                }
                var offset = messageStart
                for part in parts {
                    let target = UnsafeMutableRawBufferPointer(rebasing: memory[offset..<(offset + part.count)])
                    switch part {
                    case .plain(let bytes): bytes.withUnsafeBytes { target.copyMemory(from: $0) }
                    case .secret(let bytes): bytes.withUnsafeBytes { target.copyMemory(from: $0) }
                    }
                    offset += part.count
                }
                try output.withTypedMutableBytes { (out) throws(CryptoError) in
                    try hash(
                        into: out, key: UnsafeRawBufferPointer(subkey), domain: domain,
                        message: UnsafeRawBufferPointer(rebasing: memory[messageStart...]))
                }
            }
        } catch {
            throw error.cryptoError
        }
        return output
    }

    /// A keyed hash of `message` under `key` for `domain`, `outputByteCount` bytes (16...64). Not
    /// secret: used for item ids and marker checks.
    package static func keyedHash(
        _ message: [UInt8],
        key: SymmetricKey,
        domain: Domain,
        outputByteCount: Int = 32
    ) throws(CryptoError) -> [UInt8] {
        try message.withTypedBytes { (input) throws(CryptoError) in
            try keyedHash(input, key: key, domain: domain, outputByteCount: outputByteCount)
        }
    }

    /// A keyed hash (as `keyedHash(_:key:domain:outputByteCount:)`) of a message that holds secrets:
    /// it stays in secure memory.
    package static func keyedHash(
        _ message: SecureBytes,
        key: SymmetricKey,
        domain: Domain,
        outputByteCount: Int = 32
    ) throws(CryptoError) -> [UInt8] {
        try message.withUnsafeBytes { (input) throws(CryptoError) in
            try keyedHash(input, key: key, domain: domain, outputByteCount: outputByteCount)
        }
    }

    /// The one keyed hash: `outputByteCount` bytes of BLAKE2b of `message` under `key` for `domain`.
    private static func keyedHash(
        _ message: UnsafeRawBufferPointer, key: SymmetricKey, domain: Domain, outputByteCount: Int
    ) throws(CryptoError) -> [UInt8] {
        try Sodium.ensureInitialized()
        var output = [UInt8](repeating: 0, count: outputByteCount)
        try output.withTypedMutableBytes { (out) throws(CryptoError) in
            try hash(into: out, key: key, domain: domain, message: message)
        }
        return output
    }

    private static func hash(
        into out: UnsafeMutableRawBufferPointer,
        key: SymmetricKey,
        domain: Domain,
        message input: UnsafeRawBufferPointer
    ) throws(CryptoError) {
        try key.withUnsafeBytes { (keyBytes) throws(CryptoError) in
            try hash(into: out, key: keyBytes, domain: domain, message: input)
        }
    }

    static func hash(
        into out: UnsafeMutableRawBufferPointer,
        key keyBytes: UnsafeRawBufferPointer,
        domain: Domain,
        message input: UnsafeRawBufferPointer
    ) throws(CryptoError) {
        guard (16...64).contains(out.count) else {
            throw CryptoError(.invalidArgument, "BLAKE2b output must be 16 to 64 bytes")
        }
        let salt = [UInt8](repeating: 0, count: 16)
        let status = crypto_generichash_blake2b_salt_personal(
            out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
            input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
            keyBytes.baseAddress!.assumingMemoryBound(to: UInt8.self), keyBytes.count,
            salt, domain.personal)
        guard status == 0 else { throw CryptoError(.invalidArgument, "BLAKE2b failed") }
    }
}
