import Testing
import VaultCrypto
import VaultSystem

@testable import VaultStore

@Suite struct GroupKeyFileTests {
    let group = try! GroupName("db")
    let vaultID = [UInt8](repeating: 5, count: 16)

    func made(shared: Bool) throws -> (file: GroupKeyFile, always: SymmetricKey, bytes: [UInt8]) {
        let always = try SymmetricKey.random()
        let file = GroupKeyFile(
            groupID: [UInt8](repeating: 9, count: 16), isShared: shared, secrets: try GroupSecrets.random())
        let sealKey = try GroupKeyFile.sealKey(always: always, groupID: file.groupID)
        let bytes = try file.encoded(group: group, vaultID: vaultID, sealKey: sealKey).unprotectedCopy()
        return (file, always, bytes)
    }

    @Test func theOwnerAndAMemberReadTheSameKeys() throws {
        let (file, always, bytes) = try made(shared: true)
        let owner = try GroupKeyFile.decodeAsOwner(bytes, group: group, vaultID: vaultID, always: always, path: "k")
        let member = try GroupKeyFile.decodeAsMember(bytes, group: group, vaultID: vaultID, path: "k")
        for read in [owner, member] {
            #expect(read.groupID == file.groupID && read.isShared)
            #expect(read.secrets.indexKey == file.secrets.indexKey)
            #expect(read.secrets.key(generation: 1) == file.secrets.key(generation: 1))
            #expect(read.secrets.currentGeneration == 1)
        }
    }

    @Test func aPrivateGroupsFileHoldsNoKeyInTheClear() throws {
        let (file, always, bytes) = try made(shared: false)
        let secret = file.secrets.key(generation: 1)!.bytes.unprotectedCopy()
        #expect(!bytes.indices.contains { bytes[$0...].starts(with: secret) })
        let error = #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsMember(bytes, group: group, vaultID: vaultID, path: "k")
        }
        #expect(error?.code == .integrity)
        #expect(
            try GroupKeyFile.decodeAsOwner(bytes, group: group, vaultID: vaultID, always: always, path: "k").groupID
                == file.groupID)
    }

    @Test func everyFlipAndEveryOtherBindingIsRefused() throws {
        let (_, always, bytes) = try made(shared: true)
        // Header (28 + 4 bytes for one generation) and the owner's sealed part (nonce, 64 bytes, tag): the
        // owner checks those; a member checks the whole file through its MAC.
        let ownerChecked = 32 + 24 + 64 + 16
        for index in bytes.indices {
            var flipped = bytes
            flipped[index] ^= 0x01
            #expect(throws: StoreError.self, "byte \(index), member") {
                _ = try GroupKeyFile.decodeAsMember(flipped, group: group, vaultID: vaultID, path: "k")
            }
            if index < ownerChecked {
                #expect(throws: StoreError.self, "byte \(index), owner") {
                    _ = try GroupKeyFile.decodeAsOwner(
                        flipped, group: group, vaultID: vaultID, always: always, path: "k")
                }
            }
        }
        let otherGroup = try GroupName("web")
        #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsMember(bytes, group: otherGroup, vaultID: vaultID, path: "k")
        }
        #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsOwner(bytes, group: otherGroup, vaultID: vaultID, always: always, path: "k")
        }
        let otherVault = [UInt8](repeating: 6, count: 16)
        #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsMember(bytes, group: group, vaultID: otherVault, path: "k")
        }
        #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsOwner(
                bytes, group: group, vaultID: vaultID, always: try SymmetricKey.random(), path: "k")
        }
        #expect(throws: StoreError.self) {
            try GroupKeyFile.decodeAsMember(Array(bytes.dropLast()), group: group, vaultID: vaultID, path: "k")
        }
    }
}
