import Foundation
import Testing
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

/// Item history: versions kept, listed, read, restored and purged; check-and-set.
@Suite struct HistoryTests {
    /// The names of the version files in a group's directory.
    static func versionFiles(_ t: TemporaryVault, group: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/" + group).filter { $0.hasPrefix(".v.") }
            .sorted()
    }

    @Test func everyChangeIsKeptAndListedWithoutSecrets() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("one", for: key)
            try vault.set("two", for: key)
            try vault.set("three", for: key)
            let history = try vault.history(of: key)
            #expect(history.map(\.number) == [1, 2, 3])
            #expect(history.map(\.isCurrent) == [false, false, true])
            #expect(history.allSatisfy { $0.writerID == ProcessIdentity.effectiveUserID && $0.client != nil })
            #expect(history.allSatisfy { !$0.isDeletion })
            #expect(try vault.data(for: key, version: 1) == Data("one".utf8))
            #expect(try vault.data(for: key, version: 2) == Data("two".utf8))
            #expect(try vault.data(for: key, version: 3) == Data("three".utf8))
            #expect(try vault.data(for: key, version: 4) == nil)
            // Each version is a file sealed as the item is: no secret in the clear.
            let group = try #require(vault.client.defaultGroup).rawValue
            for name in try Self.versionFiles(t, group: group) {
                let bytes = try Data(contentsOf: URL(fileURLWithPath: t.path + "/groups/\(group)/" + name))
                #expect(bytes.range(of: Data("one".utf8)) == nil && bytes.range(of: Data("two".utf8)) == nil)
            }
        }
    }

    @Test func restoreMakesANewVersionAndUndoesADelete() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("good", for: key)
            try vault.set("bad", for: key)
            #expect(try vault.restore(key, version: 1) == 3)
            #expect(try vault.string(for: key) == "good")
            #expect(try vault.history(of: key).map(\.number) == [1, 2, 3])
            #expect(try vault.remove(key))
            #expect(try vault.string(for: key) == nil)
            let afterDelete = try vault.history(of: key)
            #expect(afterDelete.map(\.number) == [1, 2, 3, 4])
            #expect(afterDelete.last?.isDeletion == true && afterDelete.last?.isCurrent == false)
            #expect(status { _ = try vault.data(for: key, version: 4) } == .param)
            #expect(status { _ = try vault.restore(key, version: 4) } == .param)
            #expect(try vault.restore(key, version: 2) == 5)
            #expect(try vault.string(for: key) == "bad")
            #expect(try vault.history(of: key).last?.isCurrent == true)
        }
    }

    @Test func anItemMadeAgainAfterADeleteCarriesOnTheNumbering() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("first", for: key)
            try vault.remove(key)
            try vault.set("second", for: key)
            #expect(try vault.currentVersion(of: key) == 3)
            #expect(try vault.history(of: key).map(\.number) == [1, 2, 3])
            #expect(try vault.data(for: key, version: 1) == Data("first".utf8))
            // And through `add`, as `SecItemAdd` makes it.
            try vault.remove(key)
            try vault.add(
                .genericPassword, attributes: key.attributes(accessibility: .afterFirstUnlock), data: Data("x".utf8))
            #expect(try vault.currentVersion(of: key) == 5)
        }
    }

    @Test func historyIsPrunedAtTheBound() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            let kept = vault.versionsKept
            #expect(kept == 10)
            for i in 1...(kept + 7) { try vault.set("v\(i)", for: key) }
            let numbers = try vault.history(of: key).map(\.number)
            // The current version and the `kept` before it.
            #expect(numbers == Array(UInt64(7)...UInt64(kept + 7)))
            let group = try #require(vault.client.defaultGroup).rawValue
            #expect(try Self.versionFiles(t, group: group).count == kept)
            #expect(try vault.data(for: key, version: 6) == nil)
            #expect(try vault.data(for: key, version: 7) == Data("v7".utf8))
        }
    }

    @Test func purgeRemovesEveryVersion() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            let other = try ItemKey(service: "db", account: "other")
            try vault.set("a", for: key)
            try vault.set("b", for: key)
            try vault.set("c", for: other)
            try vault.set("d", for: other)
            #expect(try vault.purge(key))
            #expect(status { _ = try vault.history(of: key) } == .itemNotFound)
            let group = try #require(vault.client.defaultGroup).rawValue
            #expect(try Self.versionFiles(t, group: group).count == 1)  // the other item's
            #expect(try vault.purge(key) == false)
            // A purge after a delete removes the tombstone and the versions.
            try vault.remove(other)
            #expect(try vault.purge(other))
            #expect(try Self.versionFiles(t, group: group).isEmpty)
        }
    }

    @Test func checkAndSetRefusesAStaleVersion() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            #expect(try vault.set(Data("a".utf8), for: key, ifVersion: 0) == 1)
            #expect(status { try vault.set(Data("b".utf8), for: key, ifVersion: 0) } == .duplicateItem)
            #expect(try vault.set(Data("b".utf8), for: key, ifVersion: 1) == 2)
            let stale = #expect(throws: VaultError.self) { try vault.set(Data("c".utf8), for: key, ifVersion: 1) }
            #expect(stale?.status == .duplicateItem)
            #expect(stale?.message.contains("version 2 is current") == true)
            #expect(try vault.string(for: key) == "b")
        }
    }

    @Test func concurrentCheckAndSetWritersHaveOneWinnerARound() async throws {
        try await withTemporaryVault { t in
            let key = try ItemKey(service: "counter", account: "")
            let setup = try t.open()
            try setup.set(Data("0".utf8), for: key)
            let writers = 6
            let rounds = 8
            for round in 0..<rounds {
                let expected = try #require(try setup.currentVersion(of: key))
                let wins = try await withThrowingTaskGroup(of: Bool.self) { tasks in
                    for writer in 0..<writers {
                        tasks.addTask {
                            let vault = try t.open()
                            do {
                                try vault.set(Data("\(round).\(writer)".utf8), for: key, ifVersion: expected)
                                return true
                            } catch let error as VaultError where error.status == .duplicateItem {
                                return false
                            }
                        }
                    }
                    return try await tasks.reduce(0) { $0 + ($1 ? 1 : 0) }
                }
                #expect(wins == 1, "round \(round)")
                #expect(try setup.currentVersion(of: key) == expected + 1)
            }
        }
    }

    @Test func rotationKeepsTheHistoryReadable() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["rotated"])
            let group = try AccessGroup("rotated")
            try vault.createGroup(group, unixGroup: nil)
            let key = try ItemKey(service: "db", account: "app", group: group)
            try vault.set("old", for: key)
            try vault.set("new", for: key)
            try vault.remove(key)
            _ = try vault.rotateGroup(group)
            #expect(try vault.data(for: key, version: 1) == Data("old".utf8))
            #expect(try vault.data(for: key, version: 2) == Data("new".utf8))
            #expect(try vault.history(of: key).last?.isDeletion == true)
        }
    }

    @Test func rekeyKeepsTheHistoryReadable() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("old", for: key)
            try vault.set("new", for: key)
            try vault.rekey(newPassphrase: nil)
            let reopened = try t.open()
            #expect(try reopened.data(for: key, version: 1) == Data("old".utf8))
            #expect(try reopened.history(of: key).map(\.number) == [1, 2])
        }
    }
}

/// History across moves, damage, upgrades and backups.
@Suite struct HistoryEdgeTests {
    @Test func aMoveKeepsTheSourcesHistoryAndCarriesOnTheDestinationsNumbering() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let source = try ItemKey(service: "db", account: "a")
            let destination = try ItemKey(service: "db", account: "b")
            // The destination's name had an item once: 2 versions and a deletion.
            try vault.set("b1", for: destination)
            try vault.set("b2", for: destination)
            try vault.remove(destination)
            try vault.set("a1", for: source)
            try vault.set("a2", for: source)
            var account = ItemAttributes()
            account.account = "b"
            try vault.update(.genericPassword(service: "db", account: "a"), with: ItemChanges(attributes: account))
            #expect(try vault.string(for: destination) == "a2")
            #expect(try vault.currentVersion(of: destination) == 4)
            #expect(try vault.history(of: destination).map(\.number) == [1, 2, 3, 4])
            #expect(try vault.data(for: destination, version: 2) == Data("b2".utf8))
            // The source keeps its versions, its last one included, and can be restored.
            #expect(try vault.string(for: source) == nil)
            #expect(try vault.history(of: source).map(\.number) == [1, 2])
            #expect(try vault.restore(source, version: 2) == 4)
            #expect(try vault.string(for: source) == "a2")
        }
    }

    @Test func aDamagedItemRemovedLeavesItsVersionsAndTheirNumbering() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("one", for: key)
            try vault.set("two", for: key)
            let group = try #require(vault.client.defaultGroup).rawValue
            let item = try #require(try t.entries("groups/\(group)").first { $0.hasSuffix(".item") })
            var bytes = try t.bytes("groups/\(group)/\(item)")
            bytes[bytes.count - 1] ^= 1
            try t.write(bytes, to: "groups/\(group)/\(item)")
            let removal = try vault.removeItem(
                .genericPassword, primaryKey: ItemAttributes(service: "db", account: "app"))
            #expect(removal.damaged.count == 1)
            #expect(try vault.history(of: key).map(\.number) == [1])
            #expect(try vault.restore(key, version: 1) == 3)
            #expect(try vault.string(for: key) == "one")
        }
    }

    @Test func anUpgradedVaultKeepsHistoryFromItsFirstChange() throws {
        try withTemporaryVault("history-upgrade") { t in
            try FormatOneFixture.plain.copy(to: t.path)
            let vault = try t.open(
                try Client(applicationIdentifier: "vault", accessGroups: ["com.example.app", "team.shared"]))
            #expect(vault.upgradedOnOpen)
            // `postgres` was put twice in format 1: it is at generation 2, with no version kept.
            let key = try ItemKey(service: "postgres", account: "app", group: try AccessGroup("com.example.app"))
            #expect(try vault.history(of: key).map(\.number) == [2])
            try vault.set("v3", for: key)
            #expect(try vault.data(for: key, version: 2) == Data("v2".utf8))
            #expect(try vault.history(of: key).map(\.number) == [2, 3])
        }
    }

    @Test func backupsCarryTheCurrentVersionsAndAReplacementIsANewVersion() throws {
        try withTemporaryDirectory("history-backup") { dir in
            let vault = try Vault.create(at: dir.path + "/a", client: try Client(applicationIdentifier: "app"))
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("one", for: key)
            try vault.set("two", for: key)
            let backup = dir.path + "/backup"
            let passphrase = try SecureBytes(copying: Array("backup pw".utf8))
            _ = try vault.export(to: backup, passphrase: passphrase, limits: .minimum)
            let other = try Vault.create(at: dir.path + "/b", client: try Client(applicationIdentifier: "app"))
            _ = try other.importBackup(from: backup, passphrase: passphrase)
            #expect(try other.string(for: key) == "two")
            #expect(try other.history(of: key).map(\.number) == [2])
            // An import that replaces an item keeps what it replaced as a version.
            try vault.set("three", for: key)
            _ = try vault.importBackup(from: backup, passphrase: passphrase, replace: true)
            #expect(try vault.string(for: key) == "two")
            #expect(try vault.history(of: key).map(\.number) == [1, 2, 3, 4])
            #expect(try vault.data(for: key, version: 3) == Data("three".utf8))
        }
    }

    @Test func aSettingChangedIsSeenByItsHandleAndKeptByARekey() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.setVersionsKept(3)
            #expect(vault.versionsKept == 3)
            let key = try ItemKey(service: "db", account: "app")
            for i in 1...6 { try vault.set("v\(i)", for: key) }
            #expect(try vault.history(of: key).map(\.number) == [3, 4, 5, 6])
            try vault.rekey(newPassphrase: nil)
            #expect(try t.open().versionsKept == 3)
            // Lowered, the versions past the bound go at once; 0 keeps none.
            let reopened = try t.open()
            try reopened.setVersionsKept(0)
            #expect(try reopened.history(of: key).map(\.number) == [6])
            #expect(
                try t.entries("groups/\(try #require(reopened.client.defaultGroup).rawValue)").allSatisfy {
                    !$0.hasPrefix(".v.")
                })
            try reopened.setVersionsKept(nil)
            #expect(try t.open().versionsKept == 10)
            #expect(status { try reopened.setVersionsKept(255) } == .param)
        }
    }

    @Test func noHistoryLeavesNoSecretOfAMovedItemBehind() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("a1", for: try ItemKey(service: "db", account: "a"))
            try vault.set("a2", for: try ItemKey(service: "db", account: "a"))
            var account = ItemAttributes()
            account.account = "b"
            try vault.update(.genericPassword(service: "db", account: "a"), with: ItemChanges(attributes: account))
            try vault.setVersionsKept(0)
            let group = try #require(vault.client.defaultGroup).rawValue
            #expect(try t.entries("groups/\(group)").allSatisfy { !$0.hasPrefix(".v.") })
        }
    }

    @Test func aMoveKilledBeforeItsRecordStillCarriesOnTheNumbering() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("one", for: key)
            try vault.set("two", for: key)
            // As a move killed between keeping the source as its last version and writing its record
            // leaves it: the item gone, version 2 kept, the record still `moving`.
            let group = "groups/\(try #require(vault.client.defaultGroup).rawValue)"
            let item = try #require(try t.entries(group).first { $0.hasSuffix(".item") })
            let id = String(item.dropLast(".item".count))
            try FileManager.default.moveItem(
                atPath: t.file("\(group)/\(item)"), toPath: t.file("\(group)/.v.\(id).0000000000000002"))
            try FileManager.default.removeItem(atPath: t.file("\(group)/.gen.\(id)"))
            try FileManager.default.createSymbolicLink(
                atPath: t.file("\(group)/.gen.\(id)"), withDestinationPath: "moving")
            let fresh = try t.open()
            try fresh.set("three", for: key)
            #expect(try fresh.history(of: key).map(\.number) == [1, 2, 3])
            #expect(try fresh.data(for: key, version: 2) == Data("two".utf8))
        }
    }

    @Test func plantedVersionNamesNeitherCrashNorCount() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.setVersionsKept(1)
            let key = try ItemKey(service: "db", account: "app")
            try vault.set("one", for: key)
            try vault.set("two", for: key)
            let group = "groups/\(try #require(vault.client.defaultGroup).rawValue)"
            let item = try #require(try t.entries(group).first { $0.hasSuffix(".item") })
            let id = String(item.dropLast(".item".count))
            // Names a writer never makes (near the top of the numbers) and a symlink under a kept one's name.
            for suffix in ["ffffffffffffffff", "fffffffffffffff0", "8000000000000000"] {
                try t.write([1, 2, 3], to: "\(group)/.v.\(id).\(suffix)")
            }
            try FileManager.default.createSymbolicLink(
                atPath: t.file("\(group)/.v.\(id).0000000000000009"), withDestinationPath: "/etc/passwd")
            let fresh = try t.open()
            try fresh.set("three", for: key)
            try fresh.set("four", for: key)
            #expect(try fresh.string(for: key) == "four")
            #expect(try fresh.data(for: key, version: 3) == Data("three".utf8))
            // Past the current version a planted name is nothing; below it, a symlink is refused, never
            // followed, and left out of the listing.
            #expect(try fresh.data(for: key, version: 9) == nil)
            try FileManager.default.removeItem(atPath: t.file("\(group)/.v.\(id).0000000000000003"))
            try FileManager.default.createSymbolicLink(
                atPath: t.file("\(group)/.v.\(id).0000000000000003"), withDestinationPath: "/etc/passwd")
            #expect(status { _ = try fresh.data(for: key, version: 3) } != .success)
            #expect(try fresh.history(of: key).map(\.number) == [4])
            #expect(try fresh.purge(key))
            #expect(try String(contentsOfFile: "/etc/passwd", encoding: .utf8).contains("root"))
        }
    }
}
