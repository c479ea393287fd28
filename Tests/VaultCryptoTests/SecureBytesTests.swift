import Testing

@testable import VaultCrypto

@Suite struct SecureBytesTests {
    @Test func copiesAndExposesBytesOnlyInsideClosure() throws {
        let source: [UInt8] = [1, 2, 3, 4, 5]
        let secret = try source.withUnsafeBytes { try SecureBytes(copying: $0) }
        #expect(secret.count == 5)
        #expect(secret.withUnsafeBytes { Array($0) } == source)
    }

    @Test func consumingWipesTheSourceArray() throws {
        var source: [UInt8] = Array("hunter2".utf8)
        let secret = try SecureBytes(consuming: &source)
        #expect(source.isEmpty)
        #expect(secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "hunter2")
    }

    @Test func descriptionIsRedacted() throws {
        let secret = try Array("top-secret-value".utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
        let renderings = [
            String(describing: secret), String(reflecting: secret), "\(secret)", dumpText(secret),
        ]
        for text in renderings {
            #expect(!text.contains("top-secret"))
            #expect(!text.contains("116"))  // 't' as a decimal byte
            #expect(!text.contains("746f70"))  // "top" in hex
        }
        #expect(String(describing: secret) == "SecureBytes(16 bytes, redacted)")
        #expect(Mirror(reflecting: secret).children.isEmpty)
    }

    private func dumpText(_ value: some Any) -> String {
        var text = ""
        dump(value, to: &text)
        return text
    }

    @Test func equalityIsByContentsAndLength() throws {
        let a = try [UInt8]([1, 2, 3]).withUnsafeBytes { try SecureBytes(copying: $0) }
        let b = try [UInt8]([1, 2, 3]).withUnsafeBytes { try SecureBytes(copying: $0) }
        let c = try [UInt8]([1, 2, 4]).withUnsafeBytes { try SecureBytes(copying: $0) }
        let d = try [UInt8]([1, 2]).withUnsafeBytes { try SecureBytes(copying: $0) }
        #expect(a == b)
        #expect(a != c)
        #expect(a != d)
        #expect(a.constantTimeEquals([1, 2, 3]))
        #expect(!a.constantTimeEquals([1, 2, 3, 4]))
    }

    @Test func emptyAndRandom() throws {
        let empty = try SecureBytes(count: 0) { _ in }
        #expect(empty.count == 0)
        #expect(empty == (try SecureBytes(count: 0) { _ in }))
        let r1 = try SecureBytes.random(count: 32)
        let r2 = try SecureBytes.random(count: 32)
        #expect(r1.count == 32)
        #expect(r1 != r2)
    }

    @Test func failingInitializerPassesItsErrorOn() {
        struct Boom: Error {}
        #expect(throws: Boom.self) {
            _ = try SecureBytes(count: 8) { _ in throw Boom() }
        }
    }

    @Test func negativeCountIsAnErrorNotATrap() {
        #expect(throws: CryptoError.self) {
            _ = try SecureBytes(count: -1) { _ in }
        }
    }

    /// The pages that hold a key are locked against swap ("Locked" > 0, VmFlags "lo") and excluded from
    /// core dumps (VmFlags "dd"), as /proc/self/smaps reports them.
    @Test func keyPagesAreLockedAndNotDumped() throws {
        let key = try SecureBytes.random(count: 32)
        let address = key.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
        let mapping = try #require(try MemoryMapping.containing(address))
        #expect(mapping.lockedKilobytes > 0, "key page not locked: \(mapping)")
        #expect(mapping.flags.contains("lo"), "VmFlags lack 'lo': \(mapping.flags)")
        #expect(mapping.flags.contains("dd"), "VmFlags lack 'dd': \(mapping.flags)")
    }

    @Test func sodiumInitialisesOnceUnderConcurrentFirstUse() async throws {
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<16 {
                group.addTask { try SecureBytes.random(count: 16).count }
            }
            for try await count in group { #expect(count == 16) }
        }
    }
}

@Suite struct TransientBytesTests {
    @Test func transientPlaintextsAreRedactedToo() throws {
        let k = try SymmetricKey.random()
        let nonce = try XChaCha20Poly1305.randomNonce()
        let sealed = try Array("top-secret-value".utf8).withUnsafeBytes {
            try XChaCha20Poly1305.seal($0, key: k, nonce: nonce, associatedData: [])
        }
        let opened = try sealed.withUnsafeBytes {
            try XChaCha20Poly1305.open($0, key: k, nonce: nonce, associatedData: [], as: TransientBytes.self)
        }
        #expect(opened.withBytes { String(decoding: $0, as: UTF8.self) } == "top-secret-value")
        var dumped = ""
        dump(opened, to: &dumped)
        for text in [String(describing: opened), String(reflecting: opened), dumped] {
            #expect(!text.contains("116"))  // 't' as a decimal byte
            #expect(!text.contains("top-secret"))
        }
        #expect(String(describing: opened) == "TransientBytes(16 bytes, redacted)")
    }
}
