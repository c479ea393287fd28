import Foundation
import Synchronization
import Testing
import Vault
import VaultEtcd
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import VaultFleet

/// Another machine's writes reach a machine that verified the group before by what they changed: the
/// changed nodes, leaves and items are read and checked, not the whole group. To tell the two apart, a
/// test replaces an item that did not change with another item's bytes in etcd: a complete refresh
/// refuses the group for it, a step never reads it (the cache keeps the bytes it verified).
@Suite(.serialized) struct FleetStepTests {
    /// More items than the smallest group a long-lived handle steps in.
    static let itemCount = EtcdReplica.stepMinimumItemCount + 12

    func key(_ service: String, _ group: AccessGroup) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    /// A group of `itemCount` items (`s0`...) written by a, with etcd's view of it.
    func withFilledGroup<R>(
        on endpoints: [String],
        _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup, _ etcd: FleetManifestTests.GroupState)
            throws -> R
    ) throws -> R {
        let group = try AccessGroup("step-\(UUID().uuidString.prefix(8).lowercased())")
        return try FleetTestSupport.withTwoHosts(group, a: endpoints, b: endpoints, label: "fleet-st") { a, b in
            for n in 0..<Self.itemCount { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            return try body(a, b, group, try FleetManifestTests.GroupState(group, of: a, endpoints: endpoints))
        }
    }

    /// a's update of `s5`, addition of `new` and removal of `s6`; returns the ids they changed.
    func changeThree(on a: Vault, _ group: AccessGroup, _ etcd: FleetManifestTests.GroupState) throws -> Set<ItemID> {
        let before = try etcd.manifest().items
        try a.set(Data("updated".utf8), for: try key("s5", group))
        try a.set(Data("added".utf8), for: try key("new", group))
        #expect(try a.remove(try key("s6", group)))
        let after = try etcd.manifest().items
        let changed = Set(after.keys).symmetricDifference(before.keys).union(
            after.filter { before[$0.key] != $0.value }.keys)
        #expect(changed.count == 3)
        return changed
    }

    /// Puts another unchanged item's bytes in the place of an item that `changed` does not hold; returns
    /// how to put it back.
    func replaceAnUnchangedItem(
        besides changed: Set<ItemID>, _ etcd: FleetManifestTests.GroupState
    ) throws -> () throws -> Void {
        let items = try etcd.etcd.range(prefix: etcd.root + Array("items/".utf8)).keyValues.filter { keyValue in
            !changed.contains { keyValue.key.elementsEqual(etcd.root + Array("items/\($0.rawValue)".utf8)) }
        }
        let (target, other) = (items[0], items[1])
        try etcd.etcd.put(target.key, other.value)
        return { try etcd.etcd.put(target.key, target.value) }
    }

    /// Expects `body` to be refused as an integrity failure whose message holds `words` (by default:
    /// etcd holds other bytes for an item than the group's manifest lists).
    func expectRefused(
        _ words: String = "is not the version the group's manifest lists",
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) {
        let refused = #expect(throws: VaultError.self, sourceLocation: sourceLocation) { try body() }
        let message = String(describing: refused)
        #expect(refused?.status == .decode && message.contains(words), "\(message)", sourceLocation: sourceLocation)
    }

    /// A process that does not watch (a command) opening b's vault.
    static func command(_ b: Vault, _ group: AccessGroup) throws -> Vault {
        let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
        return try Vault.open(at: b.path, client: client, fleet: .etcd(watching: false))
    }

    /// The item files in b's cache of the group.
    func cachedFileCount(_ b: Vault, _ group: AccessGroup) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: b.path + "/groups/\(group.rawValue)")
            .filter { $0.hasSuffix(".item") }.count
    }

    @Test func aLongLivedHandleTakesAnotherMachinesWritesByWhatTheyChanged() throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, etcd in
            #expect(try b.data(for: try key("s0", group)) == Data("v0".utf8), "a complete refresh")
            let changed = try changeThree(on: a, group, etcd)
            let putBack = try replaceAnUnchangedItem(besides: changed, etcd)
            // The watch reports a's writes within milliseconds; until then b may answer from its cache.
            let deadline = Date().addingTimeInterval(10)
            while try b.data(for: try key("s5", group)) != Data("updated".utf8), Date() < deadline {
                usleep(2000)
            }
            #expect(try b.data(for: try key("s5", group)) == Data("updated".utf8))
            #expect(try b.data(for: try key("new", group)) == Data("added".utf8))
            #expect(try b.data(for: try key("s6", group)) == nil)
            #expect(try b.data(for: try key("s7", group)) == Data("v7".utf8))
            #expect(try cachedFileCount(b, group) == Self.itemCount)
            // b's next write, from the manifest it stepped to, is taken by etcd and a.
            try b.set(Data("from b".utf8), for: try key("s8", group))
            #expect(try a.data(for: try key("s8", group)) == Data("from b".utf8))
            // A read that must be fresh reads every item, and finds the replaced one.
            b.requireFreshFleetReads(true)
            expectRefused {
                _ = try b.data(for: try key("s9", group))
            }
            try putBack()
            #expect(try b.data(for: try key("s9", group)) == Data("v9".utf8))
        }
    }

    /// Two machines' long-lived handles writing at the same moment: the one whose compare fails runs
    /// its write again after a step, not a complete read (the replaced unchanged item stays unread),
    /// and every write lands.
    @Test func writesThatLoseTheirCompareRunAgainAfterAStep() throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, etcd in
            #expect(try b.data(for: try key("s0", group)) == Data("v0".utf8), "a complete refresh")
            // The two items the rounds write, by their entries' change, are not the one replaced.
            let before = try etcd.manifest().items
            try a.set(Data("a".utf8), for: try key("s5", group))
            try b.set(Data("b".utf8), for: try key("s6", group))
            let written = Set(try etcd.manifest().items.filter { before[$0.key] != $0.value }.keys)
            #expect(written.count == 2)
            let putBack = try replaceAnUnchangedItem(besides: written, etcd)
            let errors = Mutex<[String]>([])
            for round in 0..<30 {
                DispatchQueue.concurrentPerform(iterations: 2) { host in
                    do {
                        if host == 0 {
                            try a.set(Data("a\(round)".utf8), for: try key("s5", group))
                        } else {
                            try b.set(Data("b\(round)".utf8), for: try key("s6", group))
                        }
                    } catch {
                        errors.withLock { $0.append("round \(round), host \(host): \(error)") }
                    }
                }
            }
            #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")
            try putBack()
            for (vault, name) in [(a, "a"), (b, "b")] {
                #expect(
                    FleetTestSupport.eventually(within: 10) {
                        (try? vault.data(for: try key("s5", group))) == Data("a29".utf8)
                            && (try? vault.data(for: try key("s6", group))) == Data("b29".utf8)
                    }, "\(name)")
            }
        }
    }

    @Test func aCommandStepsFromWhatItsMachinesLastCommandRecorded() throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, etcd in
            func command() throws -> Vault { try Self.command(b, group) }
            #expect(try command().data(for: try key("s0", group)) == Data("v0".utf8), "a complete refresh, recorded")
            let changed = try changeThree(on: a, group, etcd)
            let putBack = try replaceAnUnchangedItem(besides: changed, etcd)
            defer { try? putBack() }
            #expect(try command().data(for: try key("s5", group)) == Data("updated".utf8))
            #expect(try cachedFileCount(b, group) == Self.itemCount)
            let next = try command()
            #expect(try next.data(for: try key("new", group)) == Data("added".utf8))
            #expect(try next.data(for: try key("s6", group)) == nil)
            // A write from the root it stepped to (its leaf read for it).
            try next.set(Data("from b".utf8), for: try key("s8", group))
            #expect(try a.data(for: try key("s8", group)) == Data("from b".utf8))
            try a.set(Data("again".utf8), for: try key("s5", group))
            #expect(try command().data(for: try key("s5", group)) == Data("again".utf8))
        }
    }

    /// A part of a's write put back from before in etcd: the item (bytes that are not its entry's), its
    /// leaf, or its node (which, taken for the root's, would show no change: the old value would be
    /// served). None checks, and the complete read refuses the group, naming it.
    @Test(arguments: ["item", "leaf", "node"])
    func aPartOfAWritePutBackFromBeforeIsRefused(_ part: String) throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, etcd in
            func command() throws -> Vault { try Self.command(b, group) }
            #expect(try command().data(for: try key("s0", group)) == Data("v0".utf8), "a complete refresh, recorded")
            let keys = etcd.keys(ofLeaf: 0, epoch: try etcd.treeRoot().epoch)
            let (prefix, length, words): ([UInt8], Int?, String) =
                switch part {
                case "item": (etcd.root + Array("items/".utf8), nil, "is not the version the group's manifest lists")
                case "leaf": (etcd.treePrefix, keys.leaf.count, "of its manifest in etcd is not the one its node lists")
                default:
                    (
                        etcd.treePrefix, keys.node.count,
                        "of its manifest in etcd is not the one the manifest's root lists"
                    )
                }
            func read() throws -> [EtcdKeyValue] {
                try etcd.etcd.range(prefix: prefix).keyValues.filter { length == nil || $0.key.count == length }
            }
            let before = Dictionary(uniqueKeysWithValues: try read().map { ($0.key, $0.value) })
            try a.set(Data("updated".utf8), for: try key("s5", group))
            let changed = try #require(try read().first { before[$0.key] != $0.value })
            try etcd.etcd.put(changed.key, try #require(before[changed.key]))
            expectRefused(words) {
                _ = try command().data(for: try key("s5", group))
            }
            try etcd.etcd.put(changed.key, changed.value)
            #expect(try command().data(for: try key("s5", group)) == Data("updated".utf8))
        }
    }

    /// A rotation of a group of more items than a step needs, with the other machine writing all
    /// through it (every 20 ms), so that reseal batches lose compares and step from the head their
    /// answers hold: nothing is lost. What it asserts is the outcome, not that steps were taken. (Items
    /// that a writer beat 200 times in a row are left under the key of before, readable, for the next
    /// rotation: FLEET.md; not asserted, as a loaded machine may.)
    @Test func aRotationBeatenByAnotherMachinesWritesStepsToThem() throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, _ in
            let counter = try key("counter", group)
            try b.set(Data("0".utf8), for: counter)
            let writer = FleetTestSupport.ContinuousWriter(b, item: counter, interval: 20_000)
            #expect(FleetTestSupport.eventually(within: 30) { writer.written() > 0 })
            let rotation = try a.rotateFleetGroup(group)
            let (last, errors) = writer.stop()
            #expect(errors.isEmpty, "\(errors)")
            #expect(rotation.generation == 2, "\(rotation)")
            #expect(try a.data(for: counter) == Data(String(last).utf8))
            for n in [0, 5, 77, Self.itemCount - 1] {
                #expect(try a.data(for: try key("s\(n)", group)) == Data("v\(n)".utf8))
                #expect(try b.data(for: try key("s\(n)", group)) == Data("v\(n)".utf8))
            }
            #expect(try a.allKeys().count == Self.itemCount + 1 && b.allKeys().count == Self.itemCount + 1)
        }
    }

    /// An item put again in etcd behind the manifest's back (the same bytes, as a mirror would) makes a
    /// reseal batch's compare on it fail with the root unchanged: that is no step, and the complete
    /// refresh reads the item's new revision, so the rotation finishes.
    @Test func aRotationOverAnItemPutAgainBehindTheManifestFinishes() throws {
        let endpoints = try TestCluster.require()
        try withFilledGroup(on: endpoints) { a, b, group, etcd in
            #expect(try a.data(for: try key("s0", group)) == Data("v0".utf8))
            let item = try #require(try etcd.etcd.range(prefix: etcd.root + Array("items/".utf8)).keyValues.first)
            try etcd.etcd.put(item.key, item.value)
            let rotation = try a.rotateFleetGroup(group)
            #expect(rotation.generation == 2 && rotation.itemsLeft == 0, "\(rotation)")
            for n in [0, 5, Self.itemCount - 1] {
                #expect(try b.data(for: try key("s\(n)", group)) == Data("v\(n)".utf8))
            }
        }
    }

    /// A command whose machine's record is older than etcd's compaction cannot read the tree of before:
    /// it reads the group completely (which finds the replaced item, where a step would not).
    @Test func aCompactedRevisionIsReadCompletely() throws {
        try FleetTestSupport.withCluster("step", members: 1) { cluster in
            try withFilledGroup(on: cluster.endpoints) { a, b, group, etcd in
                func command() throws -> Vault { try Self.command(b, group) }
                #expect(try command().data(for: try key("s0", group)) == Data("v0".utf8), "recorded")
                let changed = try changeThree(on: a, group, etcd)
                _ = try replaceAnUnchangedItem(besides: changed, etcd)
                try etcd.etcd.compact(try etcd.etcd.range(etcd.manifestKey).revision)
                expectRefused {
                    _ = try command().data(for: try key("s5", group))
                }
            }
        }
    }
}
