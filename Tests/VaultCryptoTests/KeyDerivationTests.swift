import Testing

@testable import VaultCrypto

struct BLAKE2bVectorFile: Decodable {
    struct Vector: Decodable {
        let key: String
        let personal: String
        let message: String
        let outputByteCount: Int
        let hash: String
    }
    let source: String
    let vectors: [Vector]
}

@Suite struct KeyDerivationTests {
    @Test func matchesAnIndependentBLAKE2b() throws {
        let file = try Vectors.load(BLAKE2bVectorFile.self, "blake2b-personal.json")
        #expect(file.vectors.count >= 10)
        for vector in file.vectors {
            let key = try SymmetricKey(copying: Hex.decode(vector.key))
            let domain: KeyDerivation.Domain
            switch vector.personal {
            case "vault.grp.enc.v1": domain = KeyDerivation.Domain("vault.grp.enc.v1")
            case "vault.grp.idx.v1": domain = KeyDerivation.Domain("vault.grp.idx.v1")
            default: domain = KeyDerivation.Domain("vault.marker.v1")
            }
            #expect(
                domain.personal == Array(vector.personal.utf8)
                    + [UInt8](repeating: 0, count: 16 - vector.personal.utf8.count))
            let hash = try KeyDerivation.keyedHash(
                Hex.decode(vector.message), key: key, domain: domain, outputByteCount: vector.outputByteCount)
            #expect(Hex.encode(hash) == vector.hash)
            if vector.outputByteCount == 32 {
                let subkey = try KeyDerivation.subkey(of: key, domain: domain, context: Hex.decode(vector.message))
                #expect(Hex.encode(subkey.bytes.withUnsafeBytes { Array($0) }) == vector.hash)
            }
        }
    }

    @Test func domainsAndContextsSeparateKeys() throws {
        let master = try SymmetricKey.random()
        let enc = KeyDerivation.Domain("vault.grp.enc.v1")
        let idx = KeyDerivation.Domain("vault.grp.idx.v1")
        let a = try KeyDerivation.subkey(of: master, domain: enc, context: Array("group-a".utf8))
        let aAgain = try KeyDerivation.subkey(of: master, domain: enc, context: Array("group-a".utf8))
        let b = try KeyDerivation.subkey(of: master, domain: enc, context: Array("group-b".utf8))
        let aIndex = try KeyDerivation.subkey(of: master, domain: idx, context: Array("group-a".utf8))
        #expect(a == aAgain)
        #expect(a != b)
        #expect(a != aIndex)
        #expect(a != master)
        let other = try KeyDerivation.subkey(
            of: try SymmetricKey.random(), domain: enc, context: Array("group-a".utf8))
        #expect(a != other)
    }

    @Test func badSizesAreErrors() throws {
        // An 8-byte key cannot be made into a key, so it never reaches BLAKE2b.
        #expect(throws: CryptoError.self) { _ = try SymmetricKey(try SecureBytes.random(count: 8)) }
        let key = try SymmetricKey.random()
        #expect(throws: CryptoError.self) {
            _ = try KeyDerivation.keyedHash([1], key: key, domain: KeyDerivation.Domain("x"), outputByteCount: 8)
        }
    }
}
