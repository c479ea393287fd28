import Foundation
import Testing
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
}
