import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

/// Removing damaged item files: by primary key without reading them, and those `verifyAll` found,
/// never a locked or a since-repaired one.
@Suite struct RepairTests {
    func flipByte(_ path: String) throws {
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[bytes.count - 1] ^= 1
        try bytes.write(to: URL(fileURLWithPath: path))
    }

    func fileOf(_ vault: Vault, _ service: String, account: String = "") throws -> String {
        let group = vault.client.defaultGroup!
        let id = try vault.engine.itemID(
            group, ItemRecord.primaryKey(.genericPassword, ItemAttributes(service: service, account: account)))
        return vault.engine.filePath(group, id)
    }

    @Test func aDamagedItemIsRemovedByItsPrimaryKeyItsVersionsKept() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set(Data("one"), for: try ItemKey(service: "a"))
            try vault.set(Data("two"), for: try ItemKey(service: "a"))  // generation 2: a record
            try vault.set(Data("kept"), for: try ItemKey(service: "b"))
            let file = try fileOf(vault, "a")
            let record =
                (file as NSString).deletingLastPathComponent + "/.gen."
                + ((file as NSString).lastPathComponent as NSString).deletingPathExtension
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: record)) != nil)
            try flipByte(file)
            #expect(status { _ = try vault.delete(.genericPassword(service: "a", account: "")) } == .decode)
            let removal = try vault.removeItem(.genericPassword, primaryKey: ItemAttributes(service: "a", account: nil))
            #expect(removal.removed == 0)
            #expect(removal.damaged.map(\.path) == [file])
            #expect(removal.damaged.allSatisfy { $0.failedAuthentication })
            #expect(!FileManager.default.fileExists(atPath: file))
            // The record keeps the number the deletion took, after the item's kept version 1.
            #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: record)) == "deleted:0000000000000002")
            #expect(try vault.history(of: try ItemKey(service: "a")).map(\.number) == [1])
            // A sound item goes the ordinary way; then nothing is left to remove.
            let b = ItemAttributes(service: "b", account: nil)
            #expect(try vault.removeItem(.genericPassword, primaryKey: b).removed == 1)
            #expect(status { _ = try vault.removeItem(.genericPassword, primaryKey: b) } == .itemNotFound)
            #expect(try vault.verifyAll().problems.isEmpty)
        }
    }

    @Test func removeDamagedKeepsWhatWasRepairedMeanwhileAndWhatDidNotFailAuthentication() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            for service in ["a", "b", "c"] { try vault.set(Data(service.utf8), for: try ItemKey(service: service)) }
            let (a, b) = (try fileOf(vault, "a"), try fileOf(vault, "b"))
            let original = try Data(contentsOf: URL(fileURLWithPath: a))
            try flipByte(a)
            try flipByte(b)
            let problems = try vault.verifyAll().problems
            #expect(Set(problems.map(\.path)) == [a, b])
            // `a` is restored from a copy between the check and the removal: it stays.
            try original.write(to: URL(fileURLWithPath: a))
            let removed = try vault.removeDamaged(problems)
            #expect(removed.map(\.path) == [b])
            #expect(try vault.data(for: try ItemKey(service: "a")) == Data("a"))
            #expect(!FileManager.default.fileExists(atPath: b))
            // A file of a newer format is not damage: never removed.
            var newer = try Data(contentsOf: URL(fileURLWithPath: try fileOf(vault, "c")))
            newer[4] = 9
            try newer.write(to: URL(fileURLWithPath: try fileOf(vault, "c")))
            let future = try vault.verifyAll().problems
            #expect(future.count == 1 && !future[0].failedAuthentication)
            #expect(try vault.removeDamaged(future).isEmpty)
            #expect(
                status {
                    _ = try vault.removeItem(.genericPassword, primaryKey: ItemAttributes(service: "c", account: nil))
                }
                    == .decode)
            #expect(FileManager.default.fileExists(atPath: try fileOf(vault, "c")))
        }
    }

    @Test func lockedFilesAreNeverRemoved() throws {
        try withTemporaryVault { t in
            let source = KeySource(
                passphrase: { (_) throws(StoreError) in try secureBytes(Array("pw".utf8)) },
                limits: .minimum)
            let client = try Client(applicationIdentifier: "com.example.app")
            let unlocked = try Vault.create(at: t.path, client: client, keySource: source)
            try unlocked.set(Data("secret"), for: try ItemKey(service: "wu"), accessibility: .whenUnlocked)
            let file = try fileOf(unlocked, "wu")
            var locking = KeySource()
            locking.usesUnlockCache = false
            let locked = try Vault.open(at: t.path, client: client, keySource: locking)
            let problems = try locked.verifyAll().problems
            #expect(problems.count == 1 && problems[0].status == .interactionNotAllowed)
            #expect(!problems[0].failedAuthentication)
            #expect(try locked.removeDamaged(problems).isEmpty)
            #expect(
                status {
                    _ = try locked.removeItem(.genericPassword, primaryKey: ItemAttributes(service: "wu", account: nil))
                }
                    == .interactionNotAllowed)
            #expect(FileManager.default.fileExists(atPath: file))
            #expect(try unlocked.data(for: try ItemKey(service: "wu")) == Data("secret"))
        }
    }
}
