import Testing

@testable import VaultCrypto

@Suite struct SealedBoxTests {
    func bytes(_ secret: SecureBytes) -> [UInt8] {
        secret.withUnsafeBytes { Array($0) }
    }

    @Test func whatIsSealedToAKeyOpensWithItsSecretKeyAlone() throws {
        let (publicKey, secretKey) = try SealedBox.keyPair()
        #expect(publicKey.count == SealedBox.publicKeyByteCount && secretKey.count == SealedBox.secretKeyByteCount)
        let message = try SecureBytes(copying: Array("the group's next key".utf8))
        let sealed = try SealedBox.seal(message, to: publicKey)
        #expect(sealed.count == message.count + SealedBox.overheadByteCount)
        #expect(bytes(try SealedBox.open(sealed, publicKey: publicKey, secretKey: secretKey)) == bytes(message))
        // Sealing again gives other bytes (an ephemeral key each time).
        #expect(try SealedBox.seal(message, to: publicKey) != sealed)

        let (otherPublic, otherSecret) = try SealedBox.keyPair()
        #expect(throws: CryptoError.self) {
            _ = try SealedBox.open(sealed, publicKey: otherPublic, secretKey: otherSecret)
        }
        for index in [0, 40, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 1
            #expect(throws: CryptoError.self) {
                _ = try SealedBox.open(altered, publicKey: publicKey, secretKey: secretKey)
            }
        }
        #expect(throws: CryptoError.self) {
            _ = try SealedBox.open(Array(sealed.prefix(48)), publicKey: publicKey, secretKey: secretKey)
        }
        #expect(throws: CryptoError.self) { _ = try SealedBox.seal(message, to: Array(publicKey.prefix(31))) }
    }
}
