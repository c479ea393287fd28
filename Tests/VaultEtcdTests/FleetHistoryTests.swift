import Foundation
import Testing
import Vault
import VaultEtcd
import VaultStore
import VaultTestSupport

/// A fleet group's item history, kept in etcd: every machine reads the same versions, undoes a change
/// another machine made, and prunes and purges them for all.
@Suite(.serialized) struct FleetHistoryTests {
    let group = try! AccessGroup("fleet")

    /// Two machines whose reads go to etcd each time: a long-lived handle otherwise answers from its
    /// cache while its watch vouches for it, and the other machine's last write may still be on its way
    /// (under a loaded test run, long enough to see).
    func withTwoHosts<R>(_ body: (Vault, Vault) throws -> R) throws -> R {
        try FleetTestSupport.withTwoHosts(
            group, a: try TestCluster.require(), b: try TestCluster.require(), label: "fleet-history"
        ) { a, b in
            a.requireFreshFleetReads(true)
            b.requireFreshFleetReads(true)
            return try body(a, b)
        }
    }

    func key(_ service: String) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    /// Whether `host` lists `numbers` as the history of `service` within 3 s: a long-lived handle sees
    /// another machine's change once its watch reports it.
    func lists(_ numbers: [UInt64], _ service: String, on host: Vault) -> Bool {
        FleetTestSupport.eventually(within: 3) {
            (try? host.history(of: try key(service)).map(\.number)) == numbers
        }
    }

    @Test func everyMachineReadsTheSameVersions() throws {
        try withTwoHosts { a, b in
            try a.set(Data("first".utf8), for: try key("db"))
            try a.set(Data("second".utf8), for: try key("db"))
            try b.set(Data("third".utf8), for: try key("db"))
            for host in [a, b] {
                let history = try host.history(of: try key("db"))
                #expect(history.map(\.number) == [1, 2, 3])
                #expect(history.map(\.isCurrent) == [false, false, true])
                // Records of a fleet group name no writer: machines on an earlier build read them.
                #expect(history.allSatisfy { $0.writerID == nil && $0.client == nil })
                #expect(try host.data(for: try key("db"), version: 1) == Data("first".utf8))
                #expect(try host.data(for: try key("db"), version: 2) == Data("second".utf8))
            }
            // Nothing of the history is in the group's directory, which is each machine's cache.
            for host in [a, b] {
                #expect(
                    try FileManager.default.contentsOfDirectory(atPath: host.path(of: group)).allSatisfy {
                        !$0.hasPrefix(".v.")
                    })
            }
        }
    }

    @Test func aRemovalOnOneMachineIsUndoneOnAnother() throws {
        try withTwoHosts { a, b in
            try a.set(Data("keep me".utf8), for: try key("api"))
            #expect(try a.remove(try key("api")))
            #expect(lists([1, 2], "api", on: b))
            let history = try b.history(of: try key("api"))
            #expect(history.last?.isDeletion == true)
            #expect(throws: VaultError.self) { try b.data(for: try key("api"), version: 2) }
            #expect(try b.restore(try key("api"), version: 1) == 3)
            #expect(try b.data(for: try key("api")) == Data("keep me".utf8))
            #expect(
                FleetTestSupport.eventually(within: 3) { (try? a.data(for: try key("api"))) == Data("keep me".utf8) })
            #expect(try a.history(of: try key("api")).map(\.number) == [1, 2, 3])
        }
    }

    @Test func anItemMadeAgainCarriesOnTheNumbering() throws {
        try withTwoHosts { a, b in
            try a.set(Data("one".utf8), for: try key("token"))
            #expect(try a.remove(try key("token")))
            #expect(lists([1, 2], "token", on: b))
            try b.set(Data("two".utf8), for: try key("token"))
            #expect(try b.history(of: try key("token")).map(\.number) == [1, 2, 3])
            #expect(try a.data(for: try key("token"), version: 1) == Data("one".utf8))
        }
    }

    @Test func versionsPastTheBoundGoFromEtcd() throws {
        try withTwoHosts { a, b in
            try a.setVersionsKept(2)
            for round in 1...6 { try a.set(Data("value \(round)".utf8), for: try key("rotated")) }
            #expect(try a.history(of: try key("rotated")).map(\.number) == [4, 5, 6])
            // Read directly, not through the listing's bound: the pruned versions are gone from etcd.
            #expect(lists([4, 5, 6], "rotated", on: b))
            for pruned in 1...3 { #expect(try b.data(for: try key("rotated"), version: UInt64(pruned)) == nil) }
            #expect(try b.data(for: try key("rotated"), version: 4) == Data("value 4".utf8))
            #expect(try a.remove(try key("rotated")))
            #expect(try b.data(for: try key("rotated"), version: 4) == nil)
            #expect(try b.data(for: try key("rotated"), version: 6) == Data("value 6".utf8))
        }
    }

    @Test func aPurgeRemovesEveryVersionForEveryMachine() throws {
        try withTwoHosts { a, b in
            try a.set(Data("one".utf8), for: try key("gone"))
            try a.set(Data("two".utf8), for: try key("gone"))
            #expect(lists([1, 2], "gone", on: b))
            #expect(try b.purge(try key("gone")))
            // The other machine's handle hears of it through its watch.
            #expect(
                FleetTestSupport.eventually(within: 3) {
                    do {
                        _ = try a.history(of: try key("gone"))
                        return false
                    } catch {
                        return (error as? VaultError)?.status == .itemNotFound
                    }
                })
            #expect(throws: VaultError.self) { try a.data(for: try key("gone"), version: 1) }
            #expect(try !b.purge(try key("gone")))
            // The name starts again from version 1.
            try a.set(Data("three".utf8), for: try key("gone"))
            #expect(lists([1], "gone", on: b))
        }
    }

    /// An item too large to go in one etcd request with its previous version (each file pads to 512
    /// KiB): the version is put on its own first, and the history is whole.
    @Test func aLargeItemKeepsItsVersions() throws {
        try withTwoHosts { a, b in
            let first = Data(repeating: 0x61, count: 400_000)
            let second = Data(repeating: 0x62, count: 400_000)
            try a.set(first, for: try key("large"))
            try a.set(second, for: try key("large"))
            #expect(lists([1, 2], "large", on: b))
            #expect(try b.data(for: try key("large"), version: 1) == first)
            #expect(try a.remove(try key("large")))
            #expect(try b.data(for: try key("large"), version: 2) == second)
        }
    }

    /// Check-and-set across machines: of two writers that read version 1, one stores.
    @Test func checkAndSetHasOneWinnerAcrossMachines() throws {
        try withTwoHosts { a, b in
            try a.set(Data("v1".utf8), for: try key("cas"))
            #expect(FleetTestSupport.eventually(within: 3) { (try? b.currentVersion(of: try key("cas"))) == 1 })
            #expect(try a.set(Data("from a".utf8), for: try key("cas"), ifVersion: 1) == 2)
            let lost = #expect(throws: VaultError.self) {
                try b.set(Data("from b".utf8), for: try key("cas"), ifVersion: 1)
            }
            #expect(lost?.message.contains("version 2 is current") == true, "\(lost?.message ?? "")")
            #expect(try b.data(for: try key("cas")) == Data("from a".utf8))
        }
    }
}
