import Testing

@testable import VaultCrypto

struct AEADVector: Decodable {
    let source: String
    let key: String
    let nonce: String
    let ad: String
    let plaintext: String
    let ciphertext: String
    let tag: String
}

@Suite struct XChaCha20Poly1305Tests {
    func key(_ bytes: [UInt8]) throws -> SymmetricKey {
        try SymmetricKey(copying: bytes)
    }

    @Test func specificationVectors() throws {
        let vectors = try Vectors.load([AEADVector].self, "xchacha20poly1305.json")
        #expect(!vectors.isEmpty)
        for vector in vectors {
            let k = try key(Hex.decode(vector.key))
            let plaintext = Hex.decode(vector.plaintext)
            let sealed = try plaintext.withUnsafeBytes {
                try XChaCha20Poly1305.seal(
                    $0, key: k, nonce: Hex.decode(vector.nonce), associatedData: Hex.decode(vector.ad))
            }
            #expect(Hex.encode(sealed) == vector.ciphertext + vector.tag, "\(vector.source)")
            let opened = try sealed.withUnsafeBytes {
                try XChaCha20Poly1305.open(
                    $0, key: k, nonce: Hex.decode(vector.nonce), associatedData: Hex.decode(vector.ad))
            }
            #expect(opened.withUnsafeBytes { Array($0) } == plaintext)
        }
    }

    /// A message sealed under a fresh key and nonce, with its associated data.
    func sealedMessage() throws -> (
        key: SymmetricKey, nonce: [UInt8], ad: [UInt8], message: [UInt8], sealed: [UInt8]
    ) {
        let k = try SymmetricKey.random()
        let nonce = try XChaCha20Poly1305.randomNonce()
        let ad: [UInt8] = Array("group/item".utf8)
        let message: [UInt8] = Array("the secret".utf8)
        let sealed = try message.withUnsafeBytes {
            try XChaCha20Poly1305.seal($0, key: k, nonce: nonce, associatedData: ad)
        }
        return (k, nonce, ad, message, sealed)
    }

    @Test func roundTripAndEveryTamperingFails() throws {
        let (k, nonce, ad, message, sealed) = try sealedMessage()
        #expect(sealed.count == message.count + XChaCha20Poly1305.tagByteCount)

        func open(_ c: [UInt8], key: SymmetricKey, nonce: [UInt8], ad: [UInt8]) throws -> SecureBytes {
            try c.withUnsafeBytes { try XChaCha20Poly1305.open($0, key: key, nonce: nonce, associatedData: ad) }
        }
        #expect(try open(sealed, key: k, nonce: nonce, ad: ad).withUnsafeBytes { Array($0) } == message)

        // Every single-bit flip of the ciphertext and tag is caught.
        for bit in 0..<(sealed.count * 8) {
            var damaged = sealed
            damaged[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(throws: CryptoError(.authenticationFailed, "authentication failed")) {
                _ = try open(damaged, key: k, nonce: nonce, ad: ad)
            }
        }
        // Every truncation is caught.
        for length in 0..<sealed.count {
            #expect(throws: CryptoError.self) { _ = try open(Array(sealed[0..<length]), key: k, nonce: nonce, ad: ad) }
        }
        // Wrong key, nonce, associated data.
        #expect(throws: CryptoError.self) {
            _ = try open(sealed, key: try SymmetricKey.random(), nonce: nonce, ad: ad)
        }
        var otherNonce = nonce
        otherNonce[0] ^= 1
        #expect(throws: CryptoError.self) { _ = try open(sealed, key: k, nonce: otherNonce, ad: ad) }
        #expect(throws: CryptoError.self) { _ = try open(sealed, key: k, nonce: nonce, ad: ad + [0]) }
    }

    @Test func wrongSizesAreErrors() throws {
        // A 16-byte key cannot be made into a key, so it never reaches the cipher.
        #expect(throws: CryptoError.self) { _ = try SymmetricKey(try SecureBytes.random(count: 16)) }
        let k = try SymmetricKey.random()
        #expect(throws: CryptoError.self) {
            _ = try [UInt8]().withUnsafeBytes {
                try XChaCha20Poly1305.seal($0, key: k, nonce: [1, 2, 3], associatedData: [])
            }
        }
    }

    /// A sealed box opened where it lies (nonce, then ciphertext, in one buffer) opens as with the nonce
    /// copied out; a nonce outside the buffer is an error, and a changed nonce fails authentication.
    @Test func aBoxOpensWithItsNonceInPlace() throws {
        let (k, nonce, ad, message, sealed) = try sealedMessage()
        let header: [UInt8] = [9, 9, 9]
        let box = header + nonce + sealed
        let opened = try XChaCha20Poly1305.open(
            box, nonceAt: header.count, from: header.count + nonce.count, key: k, associatedData: ad)
        #expect(opened.withUnsafeBytes { Array($0) } == message)

        for (nonceStart, start) in [(-1, 27), (box.count - 23, box.count), (3, box.count + 1), (3, -1)] {
            let error = #expect(throws: CryptoError.self) {
                _ = try XChaCha20Poly1305.open(box, nonceAt: nonceStart, from: start, key: k, associatedData: ad)
            }
            #expect(error?.code == .invalidArgument, "nonce at \(nonceStart), ciphertext from \(start)")
        }
        var changed = box
        changed[header.count + 5] ^= 1
        let error = #expect(throws: CryptoError.self) {
            _ = try XChaCha20Poly1305.open(
                changed, nonceAt: header.count, from: header.count + nonce.count, key: k, associatedData: ad)
        }
        #expect(error?.code == .authenticationFailed)
    }

    /// Secrets sealed under subkeys open together to what `open` under each subkey gives; a box that
    /// fails is named by its position, and nothing is returned.
    @Test func secretsOpenedTogetherAreTheSecretsOpenedOneByOne() throws {
        let roots = [try SymmetricKey.random(), try SymmetricKey.random()]
        let domain = KeyDerivation.Domain("vault.test.v1")
        let plaintexts: [[UInt8]] = [Array("one".utf8), (0..<96).map { UInt8($0) }, [], Array("fourth".utf8)]
        let other = try SymmetricKey.random()
        var boxes: [(sealed: [UInt8], nonce: [UInt8], ad: [UInt8], key: KeyDerivation.Derivation)] = []
        for (index, plaintext) in plaintexts.enumerated() {
            // The third is keyed by a mixed derivation, as a private group's item keys are.
            let derivation = KeyDerivation.Derivation(
                of: roots[index % 2], domain: domain, context: [UInt8(index)], mixing: index == 2 ? other : nil)
            let nonce = try XChaCha20Poly1305.randomNonce()
            let ad = [UInt8(index), 0xad]
            let sealed = try XChaCha20Poly1305.seal(
                plaintext, key: try KeyDerivation.subkey(derivation), nonce: nonce, associatedData: ad)
            boxes.append((sealed, nonce, ad, derivation))
        }
        func secrets(_ boxes: [(sealed: [UInt8], nonce: [UInt8], ad: [UInt8], key: KeyDerivation.Derivation)])
            -> [XChaCha20Poly1305.SealedSecret]
        {
            boxes.map {
                XChaCha20Poly1305.SealedSecret(
                    ciphertext: $0.sealed[...], nonce: $0.nonce[...], associatedData: $0.ad, sealedUnder: $0.key)
            }
        }
        var opened = try XChaCha20Poly1305.openSecrets(secrets(boxes))
        #expect(opened.map { $0.unprotectedCopy() } == plaintexts)
        // Each is a view that keeps the allocation alive.
        let last = opened.removeLast()
        opened = []
        #expect(last.unprotectedCopy() == plaintexts[3])
        #expect(try XChaCha20Poly1305.openSecrets([]).isEmpty)

        for index in boxes.indices {
            var tampered = boxes
            tampered[index].sealed[0] ^= 1
            let failure = #expect(throws: XChaCha20Poly1305.SealedSecretFailure.self) {
                _ = try XChaCha20Poly1305.openSecrets(secrets(tampered))
            }
            #expect(failure?.index == index && failure?.error.code == .authenticationFailed, "box \(index)")
            var otherAD = boxes
            otherAD[index].ad = [0xff]
            let adFailure = #expect(throws: XChaCha20Poly1305.SealedSecretFailure.self) {
                _ = try XChaCha20Poly1305.openSecrets(secrets(otherAD))
            }
            #expect(adFailure?.index == index && adFailure?.error.code == .authenticationFailed, "box \(index)")
        }
        var shortNonce = boxes
        shortNonce[1].nonce.removeLast()
        let nonceFailure = #expect(throws: XChaCha20Poly1305.SealedSecretFailure.self) {
            _ = try XChaCha20Poly1305.openSecrets(secrets(shortNonce))
        }
        #expect(nonceFailure?.index == 1 && nonceFailure?.error.code == .invalidArgument)
        var short = boxes
        short[3].sealed = Array(short[3].sealed.prefix(XChaCha20Poly1305.tagByteCount - 1))
        let shortFailure = #expect(throws: XChaCha20Poly1305.SealedSecretFailure.self) {
            _ = try XChaCha20Poly1305.openSecrets(secrets(short))
        }
        #expect(shortFailure?.index == 3 && shortFailure?.error.code == .authenticationFailed)
        var chained = boxes
        chained[0].key = KeyDerivation.Derivation(ofEarlier: 0, domain: domain, context: [])
        let chainFailure = #expect(throws: XChaCha20Poly1305.SealedSecretFailure.self) {
            _ = try XChaCha20Poly1305.openSecrets(secrets(chained))
        }
        #expect(chainFailure?.index == 0 && chainFailure?.error.code == .invalidArgument)
    }

    /// Boxes of every size around a key's, under plain and mixed derivations of contexts of different
    /// lengths (the scratch area reused long after short and short after long), open together to the
    /// plaintexts, and each to what `open` under its own subkey gives.
    @Test func secretsOfManySizesAndKeyingsOpenTogether() throws {
        let sizes = [0, 1, 31, 32, 33, 96]
        let contextLengths = [0, 5, 40]
        let roots = [try SymmetricKey.random(), try SymmetricKey.random()]
        let domain = KeyDerivation.Domain("vault.test.v1")
        var opened = 0
        for count in 1...4 {
            for start in sizes.indices {
                var sealed: [XChaCha20Poly1305.SealedSecret] = []
                var expected: [[UInt8]] = []
                for position in 0..<count {
                    let step = start + position * 5
                    let plaintext = (0..<sizes[step % sizes.count]).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ step) }
                    let context = [UInt8](
                        repeating: UInt8(position), count: contextLengths[step % contextLengths.count])
                    let derivation = KeyDerivation.Derivation(
                        of: roots[position % 2], domain: domain, context: context,
                        mixing: step % 2 == 1 ? roots[(position + 1) % 2] : nil)
                    let key = try KeyDerivation.subkey(derivation)
                    let nonce = try XChaCha20Poly1305.randomNonce()
                    let ad = [UInt8(count), UInt8(start), UInt8(position)]
                    let box = try XChaCha20Poly1305.seal(plaintext, key: key, nonce: nonce, associatedData: ad)
                    let alone: SecureBytes = try XChaCha20Poly1305.open(
                        box, from: 0, key: key, nonce: nonce, associatedData: ad)
                    #expect(alone.unprotectedCopy() == plaintext)
                    sealed.append(
                        XChaCha20Poly1305.SealedSecret(
                            ciphertext: box[...], nonce: nonce[...], associatedData: ad, sealedUnder: derivation))
                    expected.append(plaintext)
                }
                let together = try XChaCha20Poly1305.openSecrets(sealed)
                #expect(together.map { $0.unprotectedCopy() } == expected, "\(count) boxes from \(start)")
                opened += together.count
            }
        }
        #expect(opened == 60)
    }

    @Test func noncesAreFreshAndTheRightSize() throws {
        var seen = Set<[UInt8]>()
        for _ in 0..<10_000 {
            let nonce = try XChaCha20Poly1305.randomNonce()
            #expect(nonce.count == 24)
            seen.insert(nonce)
        }
        #expect(seen.count == 10_000)
    }

    @Test func emptyPlaintextRoundTrips() throws {
        let k = try SymmetricKey.random()
        let nonce = try XChaCha20Poly1305.randomNonce()
        let sealed = try [UInt8]().withUnsafeBytes {
            try XChaCha20Poly1305.seal($0, key: k, nonce: nonce, associatedData: [])
        }
        let opened = try sealed.withUnsafeBytes {
            try XChaCha20Poly1305.open($0, key: k, nonce: nonce, associatedData: [])
        }
        #expect(opened.count == 0)
    }
}
