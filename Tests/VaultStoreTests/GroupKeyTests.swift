import Foundation
import Synchronization
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// A key per group, items bound to the group's id, padded, per-group locks.
@Suite struct GroupKeyTests {
    let group = try! GroupName("com.example.app")
    let other = try! GroupName("com.example.other")

    @Test func aVaultStoresItemsUnderAKeyOfEachGroup() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            #expect(try vault.bytes("VAULT")[4] == 2)
            #expect(try vault.mode("VAULT") == 0o644)
            let id = try store.itemID(group: group, primaryKey: [1])
            #expect(try store.get(group: group, id: id) == nil)
            #expect(!FileManager.default.fileExists(atPath: vault.file("groups/\(group)")), "a read made the group")
            try store.put(Array("first".utf8), group: group, id: id)
            #expect(try store.get(group: group, id: id) == Array("first".utf8))
            #expect(try vault.mode("groups/\(group)/group.key") == 0o600)
            #expect(try vault.mode("groups/\(group)/.lock") == 0o600)
            #expect(try vault.mode("groups/\(group)") == 0o700)
            // Another open reads it; the id is the same before and after the group exists.
            let reopened = try VaultStore.open(at: vault.path)
            #expect(try reopened.itemID(group: group, primaryKey: [1]) == id)
            #expect(try reopened.get(group: group, id: id) == Array("first".utf8))
            // Two groups, two keys: the same plaintext gives unrelated files, each only in its group.
            let otherID = try store.itemID(group: other, primaryKey: [1])
            try store.put(Array("first".utf8), group: other, id: otherID)
            let a = try vault.bytes("groups/\(group)/group.key")
            let b = try vault.bytes("groups/\(other)/group.key")
            #expect(a[8..<24] != b[8..<24], "two groups with one id")
            #expect(try store.delete(group: group, id: id))
            #expect(try store.get(group: group, id: id) == nil)
        }
    }

    /// A vault an earlier build wrote (the fixture: `vault init --format 2`, a private group
    /// `app` and a group `team` shared with gid 0, rotated once, an item put in each before and after,
    /// by the `vault` of commit 982165f): its `classes.key`, both `group.key`s (the owner's sealed part and
    /// the members' part with its MAC) and its items read as they were written.
    @Test func aVaultAnEarlierBuildWroteReadsAsItWasWritten() throws {
        try withTemporaryVault("v2-fixture") { vault in
            try copyStoreFixture("v2-vault", to: vault.path)
            let store = try VaultStore.open(at: vault.path)
            var secrets: [String: [String]] = [:]
            for group in try store.groups() {
                for id in try store.itemIDs(in: group) {
                    // Each value is an item record whose secret comes last.
                    let record = String(decoding: try #require(try store.get(group: group, id: id)), as: UTF8.self)
                    let secret = ["app-secret", "team-secret-1", "team-secret-2"].first { record.hasSuffix($0) }
                    secrets[group.rawValue, default: []].append(try #require(secret, "\(record)"))
                }
            }
            #expect(secrets["app"] == ["app-secret"])
            #expect(secrets["team"]?.sorted() == ["team-secret-1", "team-secret-2"])
            let team = try GroupName("team")
            // The owner's part itself (`loadGroupKeyFile` would fall back to the members' part).
            let owner = try GroupKeyFile.decodeAsOwner(
                try vault.bytes("groups/team/group.key"), group: team, vaultID: store.vaultID,
                always: try #require(store.classKeys).always, path: "group.key")
            let member = try GroupKeyFile.decodeAsMember(
                try vault.bytes("groups/team/group.key"), group: team, vaultID: store.vaultID, path: "group.key")
            #expect(owner.isShared && member.isShared)
            #expect(owner.secrets.indexKey == member.secrets.indexKey)
            #expect(owner.secrets.keys.map(\.generation) == [2] && member.secrets.keys.map(\.generation) == [2])
            #expect(owner.secrets.key(generation: 2) == member.secrets.key(generation: 2))
            // New items go under the same keys: another open reads them.
            let app = try GroupName("app")
            let id = try store.itemID(group: app, primaryKey: [9])
            try store.put(Array("new".utf8), group: app, id: id)
            #expect(try VaultStore.open(at: vault.path).get(group: app, id: id) == Array("new".utf8))
        }
    }

    @Test func itemFilesHideTheLengthOfTheirSecret() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            var sizes: Set<Int> = []
            for length in [0, 1, 10, 30, 40] {
                let id = try store.itemID(group: group, primaryKey: [UInt8(length)])
                try store.put([UInt8](repeating: 7, count: length), group: group, id: id)
                #expect(try store.get(group: group, id: id) == [UInt8](repeating: 7, count: length))
                sizes.insert(try vault.bytes("groups/\(group)/\(id.fileName)").count)
            }
            // Header 12 + nonce 24 + tag 16 + one 64-byte bucket.
            #expect(sizes == [12 + 24 + 16 + 64])
            let long = try store.itemID(group: group, primaryKey: [99])
            try store.put([UInt8](repeating: 1, count: 1500), group: group, id: long)
            #expect(try vault.bytes("groups/\(group)/\(long.fileName)").count == 12 + 24 + 16 + 2048)
        }
    }

    @Test func anItemCopiedIntoAnotherGroupOrVaultFailsAuthentication() throws {
        try withTemporaryVault("v2") { vault in
            try withTemporaryVault("v2-other") { elsewhere in
                let store = try VaultStore.create(at: vault.path)
                let id = try store.itemID(group: group, primaryKey: [1])
                try store.put(Array("one".utf8), group: group, id: id)
                let file = try vault.bytes("groups/\(group)/\(id.fileName)")
                // Onto another group of the same vault, under the same name.
                try store.put(Array("two".utf8), group: other, id: id)
                try vault.write(file, to: "groups/\(other)/\(id.fileName)")
                #expect(throws: StoreError.self) { try store.get(group: other, id: id) }
                // Onto the same group and name in another vault.
                let second = try VaultStore.create(at: elsewhere.path)
                try second.put(Array("three".utf8), group: group, id: id)
                try elsewhere.write(file, to: "groups/\(group)/\(id.fileName)")
                let error = #expect(throws: StoreError.self) { try second.get(group: group, id: id) }
                #expect(error?.code == .integrity)
                #expect(try store.get(group: group, id: id) == Array("one".utf8))
            }
        }
    }

    @Test func aGroupKeyFileOfAnotherUserIsNotTheGroupsKey() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("one".utf8), group: group, id: id)
            guard ProcessIdentity.effectiveUserID == 0 else { return }
            #expect(chown(vault.file("groups/\(group)/group.key"), 65534, 65534) == 0)
            let error = #expect(throws: StoreError.self) {
                try VaultStore.open(at: vault.path).get(group: group, id: id)
            }
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("not to the vault's owner") == true)
        }
    }

    @Test func aSharedGroupIsGroupOwnedAndTraversable() throws {
        guard ProcessIdentity.effectiveUserID == 0 else { return }
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            try store.createGroup(group, unixGroup: 65534)
            let status = try FileDescriptor.currentWorkingDirectory.statusAt(vault.file("groups/\(group)"))
            #expect(status.groupID == 65534)
            #expect(status.permissions.rawValue == 0o2770)
            #expect(try vault.mode("groups/\(group)/group.key") == 0o640)
            #expect(try vault.mode("groups/\(group)/.lock") == 0o660)
            #expect(try vault.mode("") & 0o011 == 0o011)
            #expect(try vault.mode("groups") & 0o011 == 0o011)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("shared".utf8), group: group, id: id)
            #expect(try vault.mode("groups/\(group)/\(id.fileName)") == 0o660)
            #expect(try VaultStore.open(at: vault.path).get(group: group, id: id) == Array("shared".utf8))
            let again = #expect(throws: StoreError.self) { try store.createGroup(group, unixGroup: 65534) }
            #expect(again?.code == .vaultAlreadyExists)
        }
    }

    /// A format-1 vault (a committed fixture) is read only to be upgraded: the store does not open it,
    /// and says what does.
    @Test func aFormatOneVaultIsNotOpenedButUpgraded() throws {
        try withTemporaryVault("v1") { vault in
            try FormatOneFixture.plain.copy(to: vault.path)
            let error = #expect(throws: StoreError.self) { try VaultStore.open(at: vault.path) }
            #expect(error?.code == .needsUpgrade)
            #expect(error?.message.contains("`vault upgrade`") == true)
            #expect(error?.message.contains(vault.path) == true)
        }
    }

    @Test func writersOfDifferentGroupsTakeDifferentLocks() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            try store.put([2], group: other, id: try store.itemID(group: other, primaryKey: [1]))
            // While this store holds the lock of one group, another process's open writes the other.
            let second = try VaultStore.open(at: vault.path)
            let otherLock = try FileDescriptor.currentWorkingDirectory.openAt(
                vault.file("groups/\(other)/.lock"), .readWrite)
            defer { try? otherLock.close() }
            let mine = try FileDescriptor.currentWorkingDirectory.openAt(
                vault.file("groups/\(group)/.lock"), .readWrite)
            defer { try? mine.close() }
            try store.withWriteLock(groups: [group]) { (tx) throws(StoreError) in
                try tx.write([3], to: ItemLocation(group: group, id: id), protectionClass: .always)
                #expect((try? otherLock.tryLock(.exclusive)) == true, "the other group's lock was held")
                try? otherLock.unlock()
                #expect((try? mine.tryLock(.exclusive)) == false, "this group's lock was free")
                // A write outside the locked groups is refused.
                let refused = #expect(throws: StoreError.self) {
                    try tx.write([4], to: ItemLocation(group: other, id: id), protectionClass: .always)
                }
                #expect(refused?.message.contains("without its write lock") == true)
            }
            try second.put([5], group: other, id: id)
            #expect(try store.get(group: group, id: id) == [3])
        }
    }

    /// A member may delete files in a shared directory: a group that lost its key keeps its items
    /// (no new key over them), and a lost `.lock` is made again by the owner.
    @Test func aLostGroupKeyIsReportedAndALostLockIsMadeAgain() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("kept".utf8), group: group, id: id)
            try FileManager.default.removeItem(atPath: vault.file("groups/\(group)/.lock"))
            let fresh = try VaultStore.open(at: vault.path)
            try fresh.put(Array("again".utf8), group: group, id: id)
            #expect(try vault.mode("groups/\(group)/.lock") == 0o600)
            let key = try vault.bytes("groups/\(group)/group.key")
            try FileManager.default.removeItem(atPath: vault.file("groups/\(group)/group.key"))
            let other = try VaultStore.open(at: vault.path)
            let error = #expect(throws: StoreError.self) { try other.put([1], group: group, id: id) }
            #expect(error?.code == .missingKey)
            #expect(error?.message.contains("group.key is missing but group \(group) holds items") == true)
            #expect(!FileManager.default.fileExists(atPath: vault.file("groups/\(group)/group.key")))
            try vault.write(key, to: "groups/\(group)/group.key")
            try vault.chmod("groups/\(group)/group.key", 0o644)
            let exposed = #expect(throws: StoreError.self) {
                try VaultStore.open(at: vault.path).get(group: group, id: id)
            }
            #expect(exposed?.message.contains("can be read by others") == true)
            try vault.chmod("groups/\(group)/group.key", 0o600)
            #expect(try VaultStore.open(at: vault.path).get(group: group, id: id) == Array("again".utf8))
        }
    }

    /// A group whose `group.key` is gone (a member of a shared group can remove it) is made again by
    /// the owner's next write. The `.lock` found there may be anything a member put under the name: a
    /// hard link to an outside file, a FIFO. It is refused before anything is written to it or its mode
    /// changed.
    @Test func theOwnersWriteToAGroupWithoutItsKeyWritesNothingThroughAPlantedLock() throws {
        try withTemporaryVault("v2") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            // An empty group (one that holds items and lost its key is refused before its lock is looked at).
            try store.delete(group: group, id: id)
            let lock = vault.file("groups/\(group)/.lock")
            // A hard link to an empty file outside the vault (of the same user: the link count tells).
            let outside = vault.root + "/outside"
            _ = FileManager.default.createFile(atPath: outside, contents: nil)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: outside)
            #expect(unlink(vault.file("groups/\(group)/group.key")) == 0 && unlink(lock) == 0)
            #expect(link(outside, lock) == 0)
            let linked = #expect(throws: StoreError.self) {
                try VaultStore.open(at: vault.path).put([2], group: group, id: id)
            }
            #expect(linked?.code == .insecureFile, "\(String(describing: linked))")
            #expect(linked?.message.contains(lock) == true, "\(String(describing: linked))")
            #expect(try Data(contentsOf: URL(fileURLWithPath: outside)).isEmpty, "a byte was written through the link")
            #expect((try FileManager.default.attributesOfItem(atPath: outside)[.posixPermissions] as? Int) == 0o644)
            // A FIFO, with a reader holding it open: nothing is written into it. (A write that met the lock
            // only after it made the group's key again left a key to remove.)
            _ = unlink(vault.file("groups/\(group)/group.key"))
            #expect(unlink(lock) == 0 && mkfifo(lock, 0o600) == 0)
            let reader = open(lock, O_RDONLY | O_NONBLOCK)
            #expect(reader >= 0)
            defer { close(reader) }
            let fifo = #expect(throws: StoreError.self) {
                try VaultStore.open(at: vault.path).put([2], group: group, id: id)
            }
            #expect(fifo?.code == .insecureFile, "\(String(describing: fifo))")
            var byte: UInt8 = 0
            #expect(read(reader, &byte, 1) <= 0, "a byte was written into the FIFO")
        }
    }

    /// A FIFO (or anything but a regular file) under `group.key` or `.lock` is refused, and the
    /// descriptor it was opened on is closed once: a second close would close whatever another thread
    /// opened in between under the same number.
    @Test func aRefusedGroupKeyOrLockIsClosedOnce() throws {
        final class Opened: Sendable {
            let descriptors = Mutex<[Int32]>([])
        }
        for name in ["group.key", ".lock"] {
            try withTemporaryVault("v2") { vault in
                let store = try VaultStore.create(at: vault.path)
                let id = try store.itemID(group: group, primaryKey: [1])
                try store.put([1], group: group, id: id)
                let path = vault.file("groups/\(group)/\(name)")
                #expect(unlink(path) == 0 && mkfifo(path, 0o600) == 0)
                let reopened = try VaultStore.open(at: vault.path)
                // Before each close the store makes, another "thread" opens files: they take the lowest
                // free numbers, among them the one just closed when the store closes a descriptor twice
                // (several, as tests running in parallel open files too).
                let opened = Opened()
                let plan = FaultPlan(
                    .close, occurrence: 1,
                    effect: .interleave {
                        let fds = (0..<8).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
                        opened.descriptors.withLock { $0 += fds }
                    }, persistent: true)
                let error = FaultInjection.withPlan(plan) {
                    #expect(throws: StoreError.self) {
                        if name == "group.key" {
                            _ = try reopened.get(group: group, id: id)
                        } else {
                            try reopened.put([2], group: group, id: id)
                        }
                    }
                }
                #expect(error?.code == .insecureFile, "\(name): \(String(describing: error))")
                let descriptors = opened.descriptors.withLock { $0 }
                #expect(!descriptors.isEmpty)
                for fd in descriptors {
                    #expect(fcntl(fd, F_GETFD) != -1, "\(name): the store closed descriptor \(fd), not its own")
                    close(fd)
                }
            }
        }
    }
}
