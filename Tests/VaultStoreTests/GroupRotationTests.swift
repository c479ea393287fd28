import Foundation
import Synchronization
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// `rotateGroup`: a new key for one group, every item sealed again in place, ids kept.
@Suite struct GroupRotationTests {
    let group = try! GroupName("db")

    func filled(_ vault: TemporaryVault, items: Int = 5) throws -> (VaultStore, [ItemID]) {
        let store = try VaultStore.create(at: vault.path)
        var ids: [ItemID] = []
        for index in 0..<items {
            let id = try store.itemID(group: group, primaryKey: [UInt8(index)])
            try store.put(Array("value \(index)".utf8), group: group, id: id)
            ids.append(id)
        }
        return (store, ids)
    }

    func expectAllRead(_ path: String, _ ids: [ItemID], _ context: String = "") throws {
        let store = try VaultStore.open(at: path)
        for (index, id) in ids.enumerated() {
            #expect(try store.get(group: group, id: id) == Array("value \(index)".utf8), "\(context)")
        }
    }

    @Test func aRotationSealsEveryItemAgainUnderANewKeyAndKeepsTheirNames() throws {
        try withTemporaryVault("rotate") { vault in
            let (store, ids) = try filled(vault)
            let before = try vault.entries("groups/\(group)")
            let oldKeyFile = try vault.bytes("groups/\(group)/group.key")
            #expect(try store.rotateGroup(group) == ids.count)
            #expect(try vault.entries("groups/\(group)") == before, "names changed")
            try expectAllRead(vault.path, ids)
            #expect(try store.get(group: group, id: ids[0]) == Array("value 0".utf8), "the rotating store's own read")
            let keyFile = try vault.bytes("groups/\(group)/group.key")
            #expect(keyFile[7] == 1, "the old key is still in group.key")
            #expect(UInt32(bigEndianBytes: keyFile[24..<28]) == 2)
            for id in ids {
                #expect(UInt32(bigEndianBytes: try vault.bytes("groups/\(group)/\(id.fileName)")[8..<12]) == 2)
            }
            // The old key file's keys do not open what is there now.
            let old = try GroupKeyFile.decodeAsOwner(
                oldKeyFile, group: group, vaultID: store.vaultID, always: store.classKeys!.always, path: "old")
            #expect(old.secrets.key(generation: 2) == nil)
            // A second rotation moves on to generation 3.
            #expect(try store.rotateGroup(group) == ids.count)
            #expect(UInt32(bigEndianBytes: try vault.bytes("groups/\(group)/group.key")[24..<28]) == 3)
            try expectAllRead(vault.path, ids)
        }
    }

    /// Each system call of a rotation failing in turn (the state a crash at that point leaves): every
    /// item reads afterwards, and the next rotation finishes.
    @Test func aRotationStoppedAtAnyStepLeavesEveryItemReadable() throws {
        try withTemporaryVault("rotate") { vault in
            let (_, ids) = try filled(vault, items: 3)
            let counting = FaultPlan.counting()
            try FaultInjection.withPlan(counting) { _ = try VaultStore.open(at: vault.path).rotateGroup(group) }
            var injected = 0
            for operation in SystemOperation.allCases where counting.count(of: operation) > 0 {
                for occurrence in 1...counting.count(of: operation) {
                    // In a function of its own, so that the failed store (and any lock whose release was
                    // the call that failed) is gone before the next open: its descriptors close with it.
                    func attempt() throws -> Int {
                        let store = try VaultStore.open(at: vault.path)
                        let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                        _ = try? FaultInjection.withPlan(plan) { try store.rotateGroup(group) }
                        return plan.injectedCount
                    }
                    injected += try attempt()
                    try expectAllRead(vault.path, ids, "\(operation) #\(occurrence)")
                    #expect(try VaultStore.open(at: vault.path).rotateGroup(group) <= ids.count)
                    try expectAllRead(vault.path, ids, "after \(operation) #\(occurrence) and a rotation")
                    #expect(try vault.bytes("groups/\(group)/group.key")[7] == 1, "\(operation) #\(occurrence)")
                }
            }
            #expect(injected > 10)
        }
    }

    @Test func readersDuringRotationsAlwaysGetTheValue() throws {
        try withTemporaryVault("rotate") { vault in
            let (store, ids) = try filled(vault, items: 4)
            // A reader that read the key file before the rotations (as a long-lived process would).
            let reader = try VaultStore.open(at: vault.path)
            #expect(try reader.get(group: group, id: ids[0]) == Array("value 0".utf8))
            let done = Atomic(false)
            let failures = Mutex<[String]>([])
            let reads = Atomic(0)
            let thread = Thread {
                while !done.load(ordering: .relaxed) {
                    for (index, id) in ids.enumerated() {
                        do throws(StoreError) {
                            if try reader.get(group: group, id: id) != Array("value \(index)".utf8) {
                                failures.withLock { $0.append("wrong value of \(index)") }
                            }
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                        reads.add(1, ordering: .relaxed)
                    }
                }
            }
            thread.start()
            for _ in 0..<5 { try store.rotateGroup(group) }
            done.store(true, ordering: .relaxed)
            while !thread.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
            #expect(reads.load(ordering: .relaxed) > 0)
        }
    }

    /// A writer that read the key file before another process rotated the group writes under the new
    /// key: it finds the replaced `group.key` when it takes the group's lock.
    @Test func aWriterOpenAcrossARotationWritesUnderTheNewKey() throws {
        try withTemporaryVault("rotate") { vault in
            let (writer, ids) = try filled(vault, items: 2)
            try VaultStore.open(at: vault.path).rotateGroup(group)
            try writer.put(Array("value 0".utf8), group: group, id: ids[0])
            #expect(UInt32(bigEndianBytes: try vault.bytes("groups/\(group)/\(ids[0].fileName)")[8..<12]) == 2)
            try expectAllRead(vault.path, ids)
            #expect(try VaultStore.open(at: vault.path).rotateGroup(group) == ids.count)
            try expectAllRead(vault.path, ids)
        }
    }
}
