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

    /// Keys made together in one allocation are the keys that one call each makes: plain, mixed, and
    /// keyed by an earlier key of the same call; each is its own 32-byte view.
    @Test func subkeysMadeTogetherAreTheKeysMadeOneByOne() throws {
        let master = try SymmetricKey.random()
        let other = try SymmetricKey.random()
        let enc = KeyDerivation.Domain("vault.grp.enc.v1")
        let idx = KeyDerivation.Domain("vault.grp.idx.v1")
        let keys = try KeyDerivation.subkeys([
            KeyDerivation.Derivation(of: master, domain: enc, context: [0]),
            KeyDerivation.Derivation(of: master, domain: idx, context: [1, 2], mixing: other),
            KeyDerivation.Derivation(ofEarlier: 0, domain: idx, context: Array("group".utf8)),
            KeyDerivation.Derivation(ofEarlier: 2, domain: enc, context: []),
        ])
        let first = try KeyDerivation.subkey(of: master, domain: enc, context: [0])
        let third = try KeyDerivation.subkey(of: first, domain: idx, context: Array("group".utf8))
        #expect(keys.count == 4)
        #expect(keys[0] == first)
        #expect(keys[1] == (try KeyDerivation.subkey(of: master, domain: idx, context: [1, 2], mixing: other)))
        #expect(keys[2] == third)
        #expect(keys[3] == (try KeyDerivation.subkey(of: third, domain: enc, context: [])))
        #expect(keys.allSatisfy { $0.bytes.count == SymmetricKey.byteCount })
        #expect(try KeyDerivation.subkeys([]).isEmpty)
        #expect(throws: CryptoError.self) {
            _ = try KeyDerivation.subkeys([KeyDerivation.Derivation(ofEarlier: 0, domain: enc, context: [])])
        }
    }

    /// A mixed subkey is BLAKE2b keyed with the key over the other key's bytes, then the context: the
    /// message built in scratch memory is exactly that.
    @Test func aMixedSubkeyIsTheKeyedHashOfTheOtherKeyThenTheContext() throws {
        let key = try SymmetricKey.random()
        let other = try SymmetricKey.random()
        let domain = KeyDerivation.Domain("vault.grp.enc.v2")
        for context in [[], [1], Array(repeating: UInt8(7), count: 17)] as [[UInt8]] {
            let expected = try KeyDerivation.keyedHash(
                other.bytes.unprotectedCopy() + context, key: key, domain: domain)
            let mixed = try KeyDerivation.subkey(of: key, domain: domain, context: context, mixing: other)
            #expect(mixed.bytes.unprotectedCopy() == expected)
            // Among others of other sizes, in one allocation, too.
            let together = try KeyDerivation.subkeys([
                KeyDerivation.Derivation(of: key, domain: domain, context: context + context, mixing: other),
                KeyDerivation.Derivation(of: key, domain: domain, context: context, mixing: other),
                KeyDerivation.Derivation(of: other, domain: domain, context: context),
            ])
            #expect(together[1] == mixed)
            #expect(together[2] == (try KeyDerivation.subkey(of: other, domain: domain, context: context)))
        }
    }

    /// A keyed hash of parts under a derived key is the keyed hash of the parts joined under that key.
    @Test func aKeyedHashOfPartsIsTheHashOfThemJoined() throws {
        let root = try SymmetricKey.random()
        let secret = try SecureBytes.random(count: 64)
        let domain = KeyDerivation.Domain("vault.gmac.v2")
        let derivation = KeyDerivation.Derivation(
            of: root, domain: KeyDerivation.Domain("vault.gmkey.v2"), context: [3])
        let parts: [PlainOrSecretBytes] = [.plain([1, 2, 3]), .secret(secret), .plain([]), .plain([4])]
        let joined = [1, 2, 3] + secret.unprotectedCopy() + [4]
        let subkey = try KeyDerivation.subkey(derivation)
        #expect(
            try KeyDerivation.keyedHash(parts, keyedBy: derivation, domain: domain)
                == (try KeyDerivation.keyedHash(joined, key: subkey, domain: domain)))
        #expect(
            try KeyDerivation.keyedHash(parts, keyedBy: derivation, domain: domain, outputByteCount: 16)
                == (try KeyDerivation.keyedHash(joined, key: subkey, domain: domain, outputByteCount: 16)))
        let mixing = KeyDerivation.Derivation(of: root, domain: domain, context: [5], mixing: subkey)
        #expect(
            try KeyDerivation.keyedHash([.plain(joined)], keyedBy: mixing, domain: domain)
                == (try KeyDerivation.keyedHash(joined, key: try KeyDerivation.subkey(mixing), domain: domain)))
        #expect(try KeyDerivation.keyedHash([], keyedBy: derivation, domain: domain).count == 32)
        #expect(throws: CryptoError.self) {
            _ = try KeyDerivation.keyedHash(
                parts, keyedBy: KeyDerivation.Derivation(ofEarlier: 0, domain: domain, context: []), domain: domain)
        }
    }

    /// Views of one allocation keep it alive: a part outlives the buffer it was split from.
    @Test func aSplitPartOutlivesItsWhole() throws {
        var parts: [SecureBytes] = []
        do {
            let whole = try SecureBytes(copying: (0..<64).map { UInt8($0) })
            parts = whole.split(into: 32)
        }
        #expect(parts.count == 2)
        #expect(parts[1].unprotectedCopy() == (32..<64).map { UInt8($0) })
        #expect(parts[0].constantTimeEquals((0..<32).map { UInt8($0) }))
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
