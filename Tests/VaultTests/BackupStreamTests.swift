import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

/// Backups as a secret stream (docs/FORMAT.md, "Backups"): opened a message at a time, so an import's
/// memory does not grow with the backup, and still all or nothing.
@Suite struct BackupStreamTests {
    func keyFile(_ t: TemporaryVault, byte: UInt8) throws -> BackupKey {
        let path = t.root + "/backup-\(byte).key"
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(repeating: byte, count: 32), attributes: [.posixPermissions: 0o600])
        return try BackupKey.keyFile(path)
    }

    /// The frames of a streamed backup: (offset of the length, length) each, the end's too (length 0).
    func frames(_ bytes: [UInt8]) -> [(offset: Int, length: Int)] {
        var frames: [(Int, Int)] = []
        var offset = BackupFile.headerByteCount
        while true {
            let length = Int(UInt32(bigEndianBytes: bytes[offset..<offset + 4]))
            frames.append((offset, length))
            if length == 0 { return frames }
            offset += 4 + length
        }
    }

    /// `bytes` with its checksum made again: whoever alters a backup can do that much.
    func resummed(_ bytes: [UInt8]) throws -> [UInt8] {
        let body = Array(bytes.dropLast(16))
        return body
            + (try KeyDerivation.keyedHash(
                body, key: try SymmetricKey.zero(), domain: KeyDerivation.Domain("vault.mkey.sum.1"),
                outputByteCount: 16))
    }

    @Test func aStreamedBackupIsOneMessageAnItemAndOpensOnlyWhole() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            for index in 0..<3 { try vault.set("secret \(index)", for: try ItemKey(service: "svc\(index)")) }
            let key = try keyFile(t, byte: 1)
            let sealed = try vault.sealedBackup(key: key).bytes
            #expect(sealed[4] == 2 && sealed[6] == 2, "envelope version 2, cipher 2 (a secret stream)")
            // The fields, three items, the final message, the end.
            #expect(frames(sealed).count == 6)
            for secret in ["secret 0", "svc1"] {
                #expect(sealed.firstRange(of: Array(secret.utf8)) == nil, "\(secret) is in the backup in the clear")
            }
            let every = Query(itemClass: .genericPassword, limit: .all)
            try withTemporaryVault { other in
                let restored = try other.open()
                // A wrong key is said at the first message.
                #expect(
                    status { _ = try restored.importBackup(sealed: sealed, name: "b", key: try keyFile(t, byte: 2)) }
                        == .authFailed)
                // An item altered (its checksum made again): damage, and nothing is imported.
                var altered = sealed
                altered[frames(sealed)[2].offset + 10] ^= 1
                #expect(
                    status { _ = try restored.importBackup(sealed: try resummed(altered), name: "b", key: key) }
                        == .decode)
                #expect(status { _ = try restored.copyMatching(every) } == .itemNotFound)
                // Cut after its second item, with the end and a checksum put back: cut short, nothing imported.
                let cut = frames(sealed)[3].offset
                let shortened = try resummed(Array(sealed[..<cut]) + [0, 0, 0, 0] + [UInt8](repeating: 0, count: 16))
                #expect(status { _ = try restored.importBackup(sealed: shortened, name: "b", key: key) } == .decode)
                #expect(status { _ = try restored.copyMatching(every) } == .itemNotFound)
                // A damaged byte without a new checksum: damage, said before any key is used.
                var damaged = sealed
                damaged[damaged.count - 30] ^= 1
                #expect(status { _ = try Vault.checkBackup(damaged, name: "b") } == .decode)
                // Whole, it imports.
                #expect(try restored.importBackup(sealed: sealed, name: "b", key: key).imported == 3)
                #expect(try restored.data(for: try ItemKey(service: "svc2")) == Data("secret 2".utf8))
            }
        }
    }

    /// Every message is authenticated and decoded before anything is written: an item that a key holder
    /// sealed but that is no item, or items in another order, add nothing; a backup in a file imports
    /// the same way.
    @Test func aBackupImportsWholeOrNotAtAll() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            for index in 0..<3 { try vault.set("secret \(index)", for: try ItemKey(service: "svc\(index)")) }
            let key = try keyFile(t, byte: 4)
            let sealed = try vault.sealedBackup(key: key).bytes
            let every = Query(itemClass: .genericPassword, limit: .all)
            try withTemporaryVault { other in
                let restored = try other.open()
                // Items 1 and 2 swapped, the checksum made again.
                let f = frames(sealed)
                let item1 = Array(sealed[f[1].offset..<f[2].offset])
                let item2 = Array(sealed[f[2].offset..<f[3].offset])
                let swapped = Array(sealed[..<f[1].offset]) + item2 + item1 + Array(sealed[f[3].offset...])
                #expect(
                    status { _ = try restored.importBackup(sealed: try resummed(swapped), name: "b", key: key) }
                        == .decode)
                #expect(status { _ = try restored.copyMatching(every) } == .itemNotFound)

                // Sealed under the right key, but its last item is no item.
                let writer = try BackupStream.Writer(key: key)
                var count = 0
                let reader = try BackupStream.Reader(bytes: sealed, name: "b", ceiling: .sensitive)
                try reader.forEachMessage(key: try reader.streamKey(key)) { (_, message) throws(StoreError) in
                    try writer.add(message.unprotectedCopy())
                    count += 1
                }
                try writer.add(Array("not an item".utf8))
                let forged = try writer.finish()
                #expect(count == 4)
                #expect(status { _ = try restored.importBackup(sealed: forged, name: "b", key: key) } == .decode)
                #expect(status { _ = try restored.copyMatching(every) } == .itemNotFound)

                // From a file.
                let path = t.root + "/backup"
                _ = try vault.export(to: path, key: key)
                #expect(try restored.importBackup(from: path, key: key).imported == 3)
                #expect(try restored.data(for: try ItemKey(service: "svc1")) == Data("secret 1".utf8))
            }
        }
    }
}
