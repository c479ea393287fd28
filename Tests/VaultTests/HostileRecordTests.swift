import Foundation
import Testing
import VaultArchive
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

/// Records that whoever holds a group's key can seal (a member of a shared group, a peer, a backup),
/// with fields out of their bounds: damage that is named, never a trap in the owner's process.
@Suite struct HostileRecordTests {
    /// A well-formed record whose persistent id is 300 bytes (a real one is 16), sealed with a
    /// generation record: get, query, check and export each name it as damage and go on.
    @Test func aRecordWithAnOversizedPersistentIDIsDamageNotACrash() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["g1"])
            let group = try AccessGroup("g1")
            try vault.set("kept", for: ItemKey(service: "other", account: "acct", group: group))
            let record = ItemRecord(
                itemClass: .genericPassword, attributes: genp("svc", "acct", group: "g1"), data: Data("x".utf8),
                created: Date(), modified: Date(), persistentID: Data(repeating: 7, count: 300), generation: 2)
            let bytes = try ItemRecordCodec.encode(record)
            let store = vault.engine.store
            let id = try store.itemID(group: group.name, primaryKey: record.primaryKey)
            try store.withWriteLock(groups: [group.name]) { (tx) throws(StoreError) in
                try tx.write(
                    bytes, to: ItemLocation(group: group.name, id: id), protectionClass: .always,
                    version: ItemVersion(persistentID: [UInt8](repeating: 7, count: 16), generation: 2))
            }
            let reopened = try t.open(groups: ["g1"])
            let get = #expect(throws: VaultError.self) {
                try reopened.data(for: ItemKey(service: "svc", account: "acct", group: group))
            }
            #expect(get?.status == .decode)
            #expect(get?.message.contains("persistent id of 300 bytes") == true, "\(String(describing: get))")
            let report = try reopened.verifyAll()
            #expect(report.problems.count == 1 && report.itemCount == 2, "\(report)")
            // The other item still reads; the export leaves the damaged one out and says so.
            #expect(
                try reopened.data(for: ItemKey(service: "other", account: "acct", group: group)) == Data("kept".utf8))
            let export = #expect(throws: VaultError.self) {
                try reopened.export(
                    to: t.root + "/backup",
                    passphrase: try Array("pw".utf8).withUnsafeBytes { try SecureBytes(copying: $0) }, limits: .minimum)
            }
            #expect(export?.status == .decode, "\(String(describing: export))")
        }
    }

    /// A record sealed under another item's file name (only a holder of the group's key can make one):
    /// the item of that name is damaged for get, put, query and export, with check's words, never "not
    /// found" or "other processes kept changing the item".
    @Test func aRecordUnderAnotherItemsNameIsDamageEverywhere() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["g1"])
            let group = try AccessGroup("g1")
            let named = try ItemKey(service: "svc", account: "acct", group: group)
            let record = ItemRecord(
                itemClass: .genericPassword, attributes: genp("other", "acct", group: "g1"), data: Data("x".utf8),
                created: Date(), modified: Date(), persistentID: Data(repeating: 7, count: 16), generation: 1)
            let bytes = try ItemRecordCodec.encode(record)
            let store = vault.engine.store
            let id = try store.itemID(group: group.name, primaryKey: named.query.fullPrimaryKey!)
            try store.withWriteLock(groups: [], creating: [group.name]) { (tx) throws(StoreError) in
                try tx.write(bytes, to: ItemLocation(group: group.name, id: id), protectionClass: .always)
            }
            let reopened = try t.open(groups: ["g1"])
            let words = "the item's primary key does not match its file name"
            let get = #expect(throws: VaultError.self) { try reopened.data(for: named) }
            #expect(get?.status == .decode && get?.message.contains(words) == true, "\(String(describing: get))")
            let put = #expect(throws: VaultError.self) { try reopened.set("new", for: named) }
            #expect(put?.status == .decode && put?.message.contains(words) == true, "\(String(describing: put))")
            let search = try reopened.search(Query(itemClass: .genericPassword, limit: .all), returning: [.attributes])
            #expect(search.items.isEmpty && search.problems.count == 1, "\(search.items) \(search.problems)")
            #expect(search.problems.first?.reason.contains(words) == true, "\(search.problems)")
            let report = try reopened.verifyAll()
            #expect(report.problems.first?.reason == words, "\(report)")
            let export = #expect(throws: VaultError.self) {
                try reopened.export(
                    to: t.root + "/backup",
                    passphrase: try Array("pw".utf8).withUnsafeBytes { try SecureBytes(copying: $0) }, limits: .minimum)
            }
            #expect(
                export?.status == .decode && export?.message.contains(words) == true, "\(String(describing: export))")
        }
    }

    /// A record (sealed by a key holder, or in a backup) whose generation is at the end of `UInt64`: the
    /// next write's generation would overflow, so it is refused as it is decoded, from a file or a backup.
    @Test func aRecordWithAGenerationBeyondEveryWriteIsRefused() throws {
        for generation in [UInt64.max, ItemHistory.maximumGeneration] {
            let record = ItemRecord(
                itemClass: .genericPassword, attributes: genp("svc", "acct", group: "g1"), data: Data("x".utf8),
                created: Date(), modified: Date(), persistentID: Data(repeating: 7, count: 16), generation: generation)
            let sealed = try ItemRecordCodec.encode(record)
            let fromFile = #expect(throws: (any Error).self) { try ItemRecordCodec.decode(sealed, cache: nil) }
            #expect("\(String(describing: fromFile))".contains("above what any write makes"))
            let archived = try VaultArchive.encode(record)
            #expect(throws: (any Error).self) { try VaultArchive.decode(ItemRecord.self, from: archived) }
        }
    }
}
