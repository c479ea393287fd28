import Testing

@testable import VaultCrypto

struct Argon2idVectorFile: Decodable {
    struct Vector: Decodable {
        let passphrase: String
        let salt: String
        let operations: UInt64
        let memoryBytes: UInt64
        let key: String
    }
    let source: String
    let vectors: [Vector]
}

@Suite struct PassphraseKeyDerivationTests {
    @Test func matchesTheReferenceArgon2id() throws {
        let file = try Vectors.load(Argon2idVectorFile.self, "argon2id.json")
        #expect(file.vectors.count == 3)
        for vector in file.vectors {
            let passphrase = try Hex.decode(vector.passphrase).withUnsafeBytes { try SecureBytes(copying: $0) }
            let key = try PassphraseKeyDerivation.deriveKey(
                passphrase: passphrase, salt: Hex.decode(vector.salt),
                limits: .init(operations: vector.operations, memoryBytes: vector.memoryBytes))
            #expect(Hex.encode(key.bytes.withUnsafeBytes { Array($0) }) == vector.key)
        }
    }

    @Test func badSaltAndLimitsAreErrors() throws {
        let passphrase = try SecureBytes(count: 3) { $0.copyBytes(from: [1, 2, 3]) }
        #expect(throws: CryptoError.self) {
            _ = try PassphraseKeyDerivation.deriveKey(passphrase: passphrase, salt: [1], limits: .minimum)
        }
        #expect(throws: CryptoError.self) {
            _ = try PassphraseKeyDerivation.deriveKey(
                passphrase: passphrase, salt: [UInt8](repeating: 0, count: 16),
                limits: .init(operations: 1, memoryBytes: 1 << 40))
        }
        #expect(!PassphraseKeyDerivation.Limits(operations: 0, memoryBytes: 8192).isValid)
        #expect(PassphraseKeyDerivation.Limits.moderate.isValid)
    }
}
