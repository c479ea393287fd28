import Foundation
import Synchronization
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// The store's replication interface, with a replica that records what the store asks of it: a vault
/// without replicated groups never asks; a replicated group's writes reach the replica before the
/// group's directory, its reads are prepared, a conflict runs the transaction again, and a vault
/// opened without a replication refuses the group by name.
@Suite struct ReplicationTests {
    let local = try! GroupName("local")
    let replicated = try! GroupName("shared-everywhere")

    /// A replication whose one replica records each call and, for a write, whether the item's file was
    /// on disk yet; `conflicts` writes fail with `conflict` first.
    final class RecordingReplica: Replication, GroupReplica {
        let calls = Mutex<[String]>([])
        let conflicts = Atomic<Int>(0)
        var name: String { "the recording replica" }

        func record(_ call: String) { calls.withLock { $0.append(call) } }

        func replica(of group: GroupName, cache: ReplicaCache) throws(StoreError) -> any GroupReplica {
            record("replica \(group)")
            return self
        }

        func prepareRead(_ cache: ReplicaCache) throws(StoreError) { record("prepare read") }

        func refreshInTransaction(_ cache: ReplicaCache) throws(StoreError) -> Bool {
            record("refresh")
            return false
        }

        func write(_ id: ItemID, contents: [UInt8], history: ReplicaHistoryStep?, cache: ReplicaCache)
            throws(StoreError)
        {
            let cached = (try? cache.contents(of: id)) ?? nil
            record(cached == nil ? "write (not cached yet)" : "write (over the cached file)")
            if conflicts.load(ordering: .relaxed) > 0 {
                conflicts.subtract(1, ordering: .relaxed)
                throw StoreError(.conflict, "changed on another machine")
            }
        }

        func delete(_ id: ItemID, history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError) {
            record("delete")
        }

        func versionGenerations(of id: ItemID) throws(StoreError) -> [UInt64] { [] }

        func version(of id: ItemID, generation: UInt64) throws(StoreError) -> (contents: [UInt8], place: String)? {
            nil
        }

        func purgeVersions(of id: ItemID) throws(StoreError) { record("purge versions") }

        func forgetCache() { record("forget") }

        func transactionEnded(_ cache: ReplicaCache) {}
    }

    @Test func aVaultWithoutReplicatedGroupsNeverAsksItsReplication() throws {
        try withTemporaryVault("replication-none") { vault in
            let replication = RecordingReplica()
            let store = try VaultStore.create(at: vault.path, replication: replication)
            let id = try store.itemID(group: local, primaryKey: [1])
            try store.put(Array("value".utf8), group: local, id: id)
            #expect(try store.get(group: local, id: id) == Array("value".utf8))
            #expect(try store.itemIDs(in: local) == [id])
            #expect(try store.delete(group: local, id: id))
            #expect(!store.isFleetGroup(local))
            #expect(replication.calls.withLock { $0 }.isEmpty)
        }
    }

    @Test func aReplicatedGroupsWritesReachTheReplicaFirstAndItsReadsArePrepared() throws {
        try withTemporaryVault("replication-group") { vault in
            let replication = RecordingReplica()
            let store = try VaultStore.create(at: vault.path, replication: replication)
            var agreed = false
            try store.addReplicatedGroup(
                replicated, key: try ReplicatedGroupKey.random(), unixGroup: nil,
                settings: ("replica.conf", Array("somewhere\n".utf8)), what: "create a group"
            ) { () throws(StoreError) in agreed = true }
            #expect(agreed)
            #expect(try vault.mode("groups/\(replicated)/replica.conf") == 0o600)
            #expect(store.isFleetGroup(replicated))
            #expect(VaultStore.isFleetGroup(vaultPath: vault.path, group: replicated))
            #expect(!VaultStore.isFleetGroup(vaultPath: vault.path, group: local))

            let id = try store.itemID(group: replicated, primaryKey: [1])
            try store.put(Array("first".utf8), group: replicated, id: id)
            #expect(
                replication.calls.withLock { $0 } == [
                    "replica \(replicated)", "refresh", "write (not cached yet)",
                ])
            replication.calls.withLock { $0 = [] }
            #expect(try store.get(group: replicated, id: id) == Array("first".utf8))
            #expect(replication.calls.withLock { $0 } == ["prepare read"])

            // A conflict runs the transaction again, on a cache brought up to date again.
            replication.calls.withLock { $0 = [] }
            replication.conflicts.store(1, ordering: .relaxed)
            try store.put(Array("second".utf8), group: replicated, id: id)
            #expect(
                replication.calls.withLock { $0 } == [
                    "refresh", "write (over the cached file)", "refresh", "write (over the cached file)",
                ])
            #expect(try store.get(group: replicated, id: id) == Array("second".utf8))

            replication.calls.withLock { $0 = [] }
            #expect(try store.delete(group: replicated, id: id))
            #expect(replication.calls.withLock { $0 } == ["refresh", "delete"])
        }
    }

    @Test func aReplicatedGroupIsRefusedByNameWithoutAReplication() throws {
        try withTemporaryVault("replication-missing") { vault in
            let store = try VaultStore.create(at: vault.path, replication: RecordingReplica())
            try store.addReplicatedGroup(
                replicated, key: try ReplicatedGroupKey.random(), unixGroup: nil,
                settings: ("replica.conf", Array("somewhere\n".utf8)), what: "create a group"
            ) { () throws(StoreError) in }
            let id = try store.itemID(group: replicated, primaryKey: [1])
            try store.put(Array("value".utf8), group: replicated, id: id)

            let plain = try VaultStore.open(at: vault.path)
            let error = #expect(throws: StoreError.self) { try plain.get(group: replicated, id: id) }
            #expect(error?.code == .cryptoUnavailable)
            #expect(
                error?.message.contains("group \(replicated) is a fleet group") == true, "\(String(describing: error))")
            #expect(error?.message.contains("without a fleet client") == true)
            // Its other groups are not affected.
            let localID = try plain.itemID(group: local, primaryKey: [1])
            try plain.put(Array("value".utf8), group: local, id: localID)
            #expect(try plain.get(group: local, id: localID) == Array("value".utf8))
        }
    }
}
