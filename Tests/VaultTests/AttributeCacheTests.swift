import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import Vault

/// Queries that return no secrets reuse the attributes a handle has read, keyed by each file's
/// fingerprint: another handle's (or process's) writes must show at once.
@Suite struct AttributeCacheTests {
    @Test func writesByAnotherHandleInvalidateTheCache() throws {
        try withTemporaryVault { t in
            let reader = try t.open()
            let writer = try t.open()
            for i in 0..<20 {
                try writer.add(.genericPassword, attributes: genp("svc", "a\(i)"), data: Data("v\(i)"))
            }
            let all = Query.genericPassword(service: "svc", limit: .all)
            #expect(try reader.copyMatching(all).count == 20)
            #expect(try reader.copyMatching(all).count == 20)  // from the cache
            var changes = ItemChanges()
            changes.attributes.label = "relabelled"
            try writer.update(.genericPassword(service: "svc", account: "a3"), with: changes)
            try writer.delete(.genericPassword(service: "svc", account: "a4"))
            try writer.add(.genericPassword, attributes: genp("svc", "new"), data: Data("n"))
            let after = try reader.copyMatching(all)
            #expect(after.count == 20)
            #expect(after.first { $0.attributes.account == "a3" }?.attributes.label == "relabelled")
            #expect(!after.contains { $0.attributes.account == "a4" })
            #expect(after.contains { $0.attributes.account == "new" })
            // A query for secrets never comes from the cache.
            let secrets = try reader.copyMatching(all, returning: [.data, .attributes])
            #expect(secrets.first { $0.attributes.account == "a3" }?.data == Data("v3"))
            #expect(try reader.copyMatching(all, returning: .attributes).allSatisfy { $0.data == nil })
        }
    }

    /// A settled file (changed before the current clock tick) comes from the cache; the rule itself is
    /// tested in `ItemFingerprintTests`.
    @Test func settledFilesAreServedFromTheCache() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("v1"))
            let all = Query.genericPassword(service: "svc", limit: .all)
            Thread.sleep(forTimeInterval: 0.05)  // more than a clock tick (1–10 ms)
            _ = try vault.copyMatching(all)
            let plan = FaultPlan.counting()
            _ = try FaultInjection.withPlan(plan) { try vault.copyMatching(all) }
            #expect(plan.count(of: .open) == 0)
        }
    }

    @Test func aFileRolledBackUnderACachedHandleIsStillCaught() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("v1"))
            let directory = t.path + "/groups/com.example.app"
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".item") })
            let old = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
            try vault.update(.genericPassword(service: "svc", account: "a"), with: ItemChanges(data: Data("v2")))
            _ = try vault.copyMatching(.genericPassword(service: "svc", limit: .all))  // cached
            try old.write(to: URL(fileURLWithPath: directory + "/" + file))  // the older copy, a new inode
            #expect(status { _ = try vault.copyMatching(.genericPassword(service: "svc", limit: .all)) } == .decode)
        }
    }
}
