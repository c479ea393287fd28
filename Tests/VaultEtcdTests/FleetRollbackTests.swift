import Foundation
import Testing
import Vault
import VaultEtcd
import VaultFleet
import VaultSystem
import VaultTestSupport

/// A fleet group's manifest against an etcd that goes back: values replaced by older ones or by
/// another item's, items deleted or brought back, the whole manifest replayed, and a cluster restored
/// from an older `etcdctl snapshot`. Each is an integrity error on the machine that saw newer, until
/// `resyncFleetGroup(acceptingRollback: true)`.
@Suite(.serialized) struct FleetRollbackTests {

    /// Two hosts of a new fleet group on `endpoints`, reading fresh (`withTwoFreshHosts`), with its keys.
    func withTwoHosts<R>(
        on endpoints: [String], _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup, _ etcd: GroupKeys) throws -> R
    ) throws -> R {
        try FleetTestSupport.withTwoFreshHosts("rollback", on: endpoints, label: "fleet-rb") { a, b, group in
            try body(a, b, group, try GroupKeys(group, of: a, endpoints: endpoints))
        }
    }

    /// The group's keys in etcd, found by the id its key file holds.
    struct GroupKeys {
        let etcd: EtcdClient
        let root: [UInt8]

        init(_ group: AccessGroup, of vault: Vault, endpoints: [String]) throws {
            etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
            root = try FleetTestSupport.etcdRoot(of: group, in: vault)
        }

        var manifest: [UInt8] { root + Array("manifest".utf8) }

        var tree: [UInt8] { root + Array("tree/".utf8) }

        /// The manifest's root and tree as etcd holds them: what a member that went back would hold.
        func manifestState() throws -> [EtcdKeyValue] {
            try etcd.range(manifest).keyValues + etcd.range(prefix: tree).keyValues
        }

        /// The operations that bring the manifest back to `state`: its keys put as they were, and the tree's
        /// keys that it did not hold deleted (a write deletes a leaf it empties, and a whole tree written
        /// anew is under another epoch).
        func replay(_ state: [EtcdKeyValue]) throws -> [EtcdOperation] {
            let kept = Set(state.map(\.key))
            let added = try etcd.range(prefix: tree, keysOnly: true).keyValues.filter { !kept.contains($0.key) }
            return added.map { .delete(key: $0.key, rangeEnd: nil) } + state.map { .put(key: $0.key, value: $0.value) }
        }

        /// Every item key and value of the group.
        func items() throws -> [EtcdKeyValue] {
            try etcd.range(prefix: root + Array("items/".utf8)).keyValues
        }

        /// The one item written last.
        func newestItem() throws -> EtcdKeyValue {
            try #require(try items().max { $0.modRevision < $1.modRevision })
        }

        func value(_ key: [UInt8]) throws -> [UInt8] {
            try #require(try etcd.range(key).keyValues.first?.value)
        }
    }

    func key(_ service: String, _ group: AccessGroup) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    /// `body` fails with an integrity error (`decode`) whose message contains `words`.
    func expectIntegrityError(
        _ words: String, _ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let error = #expect(throws: VaultError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.status == .decode, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(
            error?.message.contains(words) == true, "\(String(describing: error?.message))",
            sourceLocation: sourceLocation)
        #expect(
            error?.message.contains("--accept-rollback") == true, "names the way out", sourceLocation: sourceLocation)
    }

    @Test func anOlderValueOfAnItemPutBackInEtcdIsAnIntegrityError() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("old password".utf8), for: db)
            let old = try keys.newestItem()
            try a.set(Data("new password".utf8), for: db)
            #expect(try b.data(for: db) == Data("new password".utf8))
            try keys.etcd.put(old.key, old.value)
            expectIntegrityError("not the version the group's manifest lists") { _ = try b.data(for: db) }
            expectIntegrityError("not the version the group's manifest lists") { _ = try a.data(for: db) }
            // The cache still holds the newer value; nothing of etcd's older one was taken.
            #expect(
                try String(contentsOfFile: b.path + "/groups/\(group)/fleet.mark", encoding: .utf8)
                    .hasPrefix("vault fleet mark v1 "))
            let report = try b.resyncFleetGroup(group, acceptingRollback: true)
            #expect(report.itemCount == 1 && report.removedCount == 0)
            #expect(try b.data(for: db) == Data("old password".utf8), "accepted on purpose")
            #expect(try a.data(for: db) == Data("old password".utf8), "the accepted state is the group's")
        }
    }

    @Test func anotherItemsValueADeletionAndAReplayAfterDeletionAreIntegrityErrors() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let first = try key("first", group)
            let second = try key("second", group)
            try a.set(Data("one".utf8), for: first)
            let firstValue = try keys.newestItem()
            try a.set(Data("two".utf8), for: second)
            let secondValue = try keys.newestItem()
            #expect(try b.data(for: second) == Data("two".utf8))

            // Another item's value under this item's key.
            try keys.etcd.put(firstValue.key, secondValue.value)
            expectIntegrityError("not the version the group's manifest lists") { _ = try b.data(for: first) }
            try keys.etcd.put(firstValue.key, firstValue.value)
            #expect(try b.data(for: first) == Data("one".utf8), "the listed value back: readable again")

            // An item deleted in etcd behind the vault's back.
            _ = try keys.etcd.transaction(compare: [], success: [.delete(key: secondValue.key, rangeEnd: nil)])
            expectIntegrityError("missing from etcd") { _ = try b.data(for: first) }
            try keys.etcd.put(secondValue.key, secondValue.value)
            #expect(try b.data(for: second) == Data("two".utf8))

            // An item removed through the vault, then brought back in etcd.
            #expect(try a.remove(second))
            #expect(try b.allKeys().count == 1)
            try keys.etcd.put(secondValue.key, secondValue.value)
            expectIntegrityError("not in the group's manifest") { _ = try b.data(for: second) }
            let report = try a.resyncFleetGroup(group, acceptingRollback: true)
            #expect(report.itemCount == 2)
            #expect(try b.data(for: second) == Data("two".utf8), "the operator accepted the replayed item")
        }
    }

    /// The CLI's put (an add and an update) and rm on a rolled-back group are the integrity error with
    /// the resync hint (exit 6), at once: not "added on another machine meanwhile" or "other processes
    /// kept changing the item" (exit 7) after retries.
    @Test func theCLIsWritesOnARolledBackGroupAreIntegrityErrors() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("v1".utf8), for: db)
            let oldItem = try keys.newestItem()
            let oldManifest = try keys.manifestState()
            try a.set(Data("v2".utf8), for: db)
            #expect(try b.data(for: db) == Data("v2".utf8))
            _ = try keys.etcd.transaction(
                compare: [],
                success: try keys.replay(oldManifest) + [.put(key: oldItem.key, value: oldItem.value)])
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            for (arguments, input) in [
                (["get", "db", "app"], ""), (["ls"], ""), (["put", "new", "app"], "added"),
                (["put", "db", "app"], "updated"),
                (["rm", "db", "app"], ""),
            ] {
                let outcome = try FleetTestSupport.run(
                    vault, ["--vault", b.path, "--group", group.rawValue] + arguments, input: input,
                    environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
                #expect(
                    outcome.status == 6 && outcome.errors.contains("vault group resync"),
                    "\(arguments): \(outcome)")
            }
            #expect(
                try keys.manifestState().map(\.value) == oldManifest.map(\.value), "the refused writes changed nothing")
        }
    }

    @Test func aReplayedOlderManifestWithItsItemsIsARollback() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("v1".utf8), for: db)
            let oldItem = try keys.newestItem()
            let oldManifest = try keys.manifestState()
            try a.set(Data("v2".utf8), for: db)
            #expect(try b.data(for: db) == Data("v2".utf8))
            // A member that went back: the whole state of before, consistent in itself.
            _ = try keys.etcd.transaction(
                compare: [],
                success: try keys.replay(oldManifest) + [.put(key: oldItem.key, value: oldItem.value)])
            expectIntegrityError("older than this machine has seen") { _ = try b.data(for: db) }
            expectIntegrityError("older than this machine has seen") {
                try b.set(Data("v3".utf8), for: db)
            }
            #expect(try keys.value(oldItem.key) == oldItem.value, "the refused write changed nothing in etcd")
            // Without the operator's word, a resync refuses it too.
            expectIntegrityError("older than this machine has seen") {
                _ = try b.resyncFleetGroup(group, acceptingRollback: false)
            }
        }
    }

    /// The older state is written to by a host that never saw more (its mark is no higher), so that its
    /// counter passes the mark of the host that saw newer: the per-item versions still tell.
    @Test func anOlderStateWrittenPastTheMarkByAnotherHostIsARollback() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("P1".utf8), for: db)
            #expect(try b.data(for: db) == Data("P1".utf8))
            let oldItem = try keys.newestItem()
            let oldManifest = try keys.manifestState()
            try a.set(Data("P2, the rotated password".utf8), for: db)
            // etcd goes back to the state b saw last; b writes other items past a's mark.
            _ = try keys.etcd.transaction(
                compare: [],
                success: try keys.replay(oldManifest) + [.put(key: oldItem.key, value: oldItem.value)])
            for round in 1...3 { try b.set(Data("other \(round)".utf8), for: try key("other", group)) }
            #expect(try b.data(for: db) == Data("P1".utf8), "b never saw more")
            expectIntegrityError("went back to an older state") { _ = try a.data(for: db) }
        }
    }

    /// One machine's knowledge protects the others: b was away while a saw the newer state, and c joins
    /// after etcd went back; once a has found the rollback, b and c refuse it too (they served it
    /// silently before). An acceptance on a is then said on b (its status, the CLI, syslog).
    @Test func aRollbackOneMachineFoundIsRefusedByOneThatWasAwayAndOneThatJoinsAfter() throws {
        let endpoints = try TestCluster.require()
        try withTwoHosts(on: endpoints) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("P1".utf8), for: db)
            #expect(try b.data(for: db) == Data("P1".utf8), "b saw P1, then was away")
            let oldItem = try keys.newestItem()
            let oldManifest = try keys.manifestState()
            try a.set(Data("P2, the rotated password".utf8), for: db)
            _ = try keys.etcd.transaction(
                compare: [],
                success: try keys.replay(oldManifest) + [.put(key: oldItem.key, value: oldItem.value)])
            expectIntegrityError("older than this machine has seen") { _ = try a.data(for: db) }
            expectIntegrityError("older than another machine has seen") { _ = try b.data(for: db) }
            expectIntegrityError("older than another machine has seen") {
                try b.set(Data("written on the old state".utf8), for: db)
            }
            let keyFile = try a.exportFleetGroupKey(group).unprotectedCopy()
            try withTemporaryVault("fleet-rb-c") { t in
                let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
                let c = try Vault.create(at: t.path, client: client, fleet: .etcd())
                expectIntegrityError("older than another machine has seen") {
                    try c.joinFleetGroup(group, keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
                    _ = try c.data(for: db)
                }
                // The operator accepts etcd's state on a: every machine takes it, and b says so.
                let report = try a.resyncFleetGroup(group, acceptingRollback: true)
                #expect(report.counter > report.previousCounter ?? 0)
                #expect(try a.data(for: db) == Data("P1".utf8))
                #expect(a.fleetCacheStatus(of: group)?.acceptedRollback == nil, "a accepted it: nothing to tell")
                #expect(try b.data(for: db) == Data("P1".utf8))
                let said = b.fleetCacheStatus(of: group)?.acceptedRollback ?? ""
                #expect(said.contains("accepted a rollback") && said.contains("this machine had seen"), "\(said)")
                if (try? c.data(for: db)) == nil {
                    try c.joinFleetGroup(group, keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
                }
                #expect(try c.data(for: db) == Data("P1".utf8), "c joined the accepted state")
                try b.set(Data("P3".utf8), for: db)
                #expect(try a.data(for: db) == Data("P3".utf8))
            }
        }
    }

    /// A command's read asks etcd for the revisions of the manifest and the rollback report alone once
    /// its last complete refresh recorded them (`fleet.cached`): an item put back in etcd behind the
    /// manifest's back is not read (the cache's verified value is served), while `--fresh`, which checks
    /// every item's revision, refuses it; another host's write, which changes the manifest, is read.
    @Test func aCommandsReadChecksTheManifestAndTheReportAloneAndAFreshOneEveryItem() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            let db = try key("db", group)
            try a.set(Data("old".utf8), for: db)
            let old = try keys.newestItem()
            try a.set(Data("new".utf8), for: db)
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            func get(_ options: [String] = []) throws -> FleetTestSupport.Outcome {
                try FleetTestSupport.run(
                    vault, ["--vault", b.path, "--group", group.rawValue, "get"] + options + ["db", "app"], input: "",
                    environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            }
            let first = try get()
            #expect(first.status == 0 && first.output == "new", "\(first)")
            #expect(FileManager.default.fileExists(atPath: b.path + "/groups/\(group.rawValue)/fleet.cached"))
            try keys.etcd.put(old.key, old.value)
            let light = try get()
            #expect(light.status == 0 && light.output == "new", "the cache's verified value: \(light)")
            let fresh = try get(["--fresh"])
            #expect(
                fresh.status == 6 && fresh.errors.contains("not the version the group's manifest lists"), "\(fresh)")
            _ = try b.resyncFleetGroup(group, acceptingRollback: true)
            try a.set(Data("newer".utf8), for: db)
            let next = try get()
            #expect(next.status == 0 && next.output == "newer", "another host's write changes the manifest: \(next)")
            // A command's own write records the state it made: the next command's read is the light check
            // too (the value put back behind the manifest's back is not read; a complete refresh refuses it).
            let put = try FleetTestSupport.run(
                vault, ["--vault", b.path, "--group", group.rawValue, "put", "db", "app"], input: "mine",
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            #expect(put.status == 0, "\(put)")
            try keys.etcd.put(old.key, old.value)
            let afterPut = try get()
            #expect(afterPut.status == 0 && afterPut.output == "mine", "\(afterPut)")
            #expect(try get(["--fresh"]).status == 6)
        }
    }

    /// A machine whose cache is behind its own mark (a crash between the mark and the cache's files, or
    /// a file lost) refuses a newer manifest that lists an item it does not hold, but reports nothing to
    /// the others: that is no evidence that etcd went back, and a report would refuse etcd's good state
    /// on every machine.
    @Test func aCacheBehindItsMarkIsRefusedHereAndReportedNowhere() throws {
        try withTwoHosts(on: try TestCluster.require()) { a, b, group, keys in
            try a.set(Data("x".utf8), for: try key("x", group))
            try a.set(Data("y".utf8), for: try key("y", group))
            #expect(try b.data(for: try key("y", group)) == Data("y".utf8))
            let directory = b.path + "/groups/\(group.rawValue)"
            let cached = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".item") }
            let x = try #require(
                try keys.items().first { $0.modRevision == (try keys.items().map(\.modRevision).min()) })
            let lost = try #require(
                cached.first { name in
                    (try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))) == Data(x.value)
                })
            try FileManager.default.removeItem(atPath: directory + "/" + lost)
            try a.set(Data("z".utf8), for: try key("z", group))
            expectIntegrityError("went back to an older state") { _ = try b.data(for: try key("z", group)) }
            #expect(try keys.etcd.range(keys.root + Array("rollback".utf8)).keyValues.isEmpty, "no report")
            #expect(try a.data(for: try key("z", group)) == Data("z".utf8), "the others read on")
        }
    }

    @Test func aClusterRestoredFromAnOlderSnapshotIsDetectedAndResyncAcceptsIt() throws {
        try FleetTestSupport.withCluster("rollback", members: 1) { cluster in
            let endpoint = cluster.endpoints[0]
            let state = cluster.state
            try withTwoHosts(on: [endpoint]) { a, b, group, _ in
                let db = try key("db", group)
                try a.set(Data("before the snapshot".utf8), for: db)
                #expect(try b.data(for: db) == Data("before the snapshot".utf8))
                #expect(try cluster.etcdctl(["snapshot", "save", state + "/older.db"]).status == 0)
                try a.set(Data("after the snapshot".utf8), for: db)
                #expect(try b.data(for: db) == Data("after the snapshot".utf8))

                // The member stopped, its data replaced by the older snapshot, started again.
                try cluster.kill(1)
                Thread.sleep(forTimeInterval: 0.2)
                let settings = try String(contentsOfFile: state + "/settings", encoding: .utf8)
                let base = try #require(
                    settings.split(separator: "\n").first { $0.hasPrefix("VAULT_ETCD_BASE_PORT=") }
                        .flatMap { Int($0.dropFirst("VAULT_ETCD_BASE_PORT=".count)) })
                let peer = "http://127.0.0.1:\(base + 11)"
                try FileManager.default.removeItem(atPath: state + "/m1.data")
                #expect(
                    try cluster.etcdctl([
                        "snapshot", "restore", state + "/older.db", "--name", "m1", "--data-dir", state + "/m1.data",
                        "--initial-cluster", "m1=\(peer)", "--initial-advertise-peer-urls", peer,
                        "--initial-cluster-token", "vault-test",
                    ]).status == 0)
                try cluster.restart(1)
                try FleetTestSupport.waitForLeader(endpoint)

                expectIntegrityError("older than this machine has seen") { _ = try b.data(for: db) }
                expectIntegrityError("older than this machine has seen") { _ = try a.data(for: db) }
                let report = try b.resyncFleetGroup(group, acceptingRollback: true)
                #expect(report.previousCounter != nil && report.replicaCounter! < report.previousCounter!)
                #expect(report.counter > report.previousCounter!)
                #expect(try b.data(for: db) == Data("before the snapshot".utf8))
                try b.set(Data("written after the resync".utf8), for: db)
                #expect(try a.data(for: db) == Data("written after the resync".utf8))
            }
        }
    }
}
