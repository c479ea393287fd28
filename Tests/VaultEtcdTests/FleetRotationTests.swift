import Foundation
import Synchronization
import Testing
import Vault
import VaultCrypto
import VaultEtcd
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import VaultFleet

/// Rotation of a fleet group's key online and revocation of a machine, on the shared cluster: every
/// machine kept takes the new key at its next read, a revoked one opens nothing written afterwards and
/// its kept key file joins nothing, and everything in etcd is sealed again under the new key.
@Suite(.serialized) struct FleetRotationTests {
    /// Three hosts of a new fleet group: `a` made it, `b` and `r` joined with the key file `a` exported
    /// (its bytes are handed to `body`, as the file a revoked machine would keep).
    func withThreeHosts<R>(
        _ body: (_ a: Vault, _ b: Vault, _ r: Vault, _ group: AccessGroup, _ keyFile: [UInt8]) throws -> R
    ) throws -> R {
        let endpoints = try TestCluster.require()
        return try FleetTestSupport.withTwoFreshHosts("rotate", on: endpoints, label: "fleet-rot") { a, b, group in
            let keyFile = try a.exportFleetGroupKey(group).unprotectedCopy()
            return try withTemporaryVault("fleet-rot-r") { t in
                let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
                let r = try Vault.create(at: t.path, client: client, fleet: .etcd())
                try r.joinFleetGroup(group, keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
                r.requireFreshFleetReads(true)
                return try body(a, b, r, group, keyFile)
            }
        }
    }

    func key(_ service: String, _ group: AccessGroup) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    /// Every item file of the group in etcd, by key.
    func itemFiles(_ group: AccessGroup, of vault: Vault) throws -> [String: [UInt8]] {
        let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: try TestCluster.require()))
        let root = try FleetTestSupport.etcdRoot(of: group, in: vault)
        let found = try etcd.range(prefix: root + Array("items/".utf8)).keyValues
        return Dictionary(uniqueKeysWithValues: found.map { (String(decoding: $0.key, as: UTF8.self), $0.value) })
    }

    /// Whether `contents`, the file of the item at etcd key `etcdKey`, opens under the key that `vault`'s
    /// own directory holds for `group` (read with the store alone, as a machine that kept its files would).
    func opens(_ contents: [UInt8], etcdKey: String, group: AccessGroup, underTheKeyOf vault: Vault) throws -> Bool {
        let store = try VaultStore.open(at: vault.path)
        let id = try ItemID(String(etcdKey.split(separator: "/").last!))
        return try store.replicaCache(of: try GroupName(group.rawValue)).opens(contents, as: id)
    }

    @Test func aRevokedMachineOpensNothingWrittenAfterAndTheOthersTakeTheNewKey() throws {
        try withThreeHosts { a, b, r, group, keyFile in
            let db = try key("db", group)
            let api = try key("api", group)
            try a.set(Data("P1".utf8), for: db)
            try a.set(Data("token-1".utf8), for: api)
            #expect(try r.data(for: db) == Data("P1".utf8))
            #expect(try b.data(for: api) == Data("token-1".utf8))
            let before = try itemFiles(group, of: a)
            let (name, oldFile) = try #require(before.first)
            #expect(
                try opens(oldFile, etcdKey: name, group: group, underTheKeyOf: r), "the control: r opened it before")

            let machines = try a.fleetGroupMachines(group)
            #expect(machines.count == 3, "\(machines)")
            #expect(machines.filter(\.isThisMachine).count == 1)
            let rID = try #require(try r.fleetGroupMachines(group).first(where: \.isThisMachine)?.id)

            let rotation = try a.rotateFleetGroup(group, revoking: [rID])
            #expect(rotation.generation == 2)
            #expect(rotation.revoked.map(\.id) == [rID])
            #expect(rotation.kept.count == 2 && !rotation.kept.contains { $0.id == rID })
            #expect(rotation.itemsResealed == 2)

            // b takes the new key at its next read, and what it writes a reads.
            #expect(try b.data(for: db) == Data("P1".utf8))
            try b.set(Data("P2, after the revocation".utf8), for: db)
            #expect(try a.data(for: db) == Data("P2, after the revocation".utf8))

            // r: refused, and neither the new value nor the items sealed again open under what it kept.
            let refused = #expect(throws: VaultError.self) { _ = try r.data(for: db) }
            #expect(refused?.status == .permissionDenied, "\(String(describing: refused))")
            #expect(refused?.message.contains("not among the machines") == true, "\(String(describing: refused))")
            for (name, file) in try itemFiles(group, of: a) {
                #expect(try !opens(file, etcdKey: name, group: group, underTheKeyOf: r), "\(name)")
                #expect(try opens(file, etcdKey: name, group: group, underTheKeyOf: b), "\(name)")
            }

            // Its kept key file joins nothing.
            try withTemporaryVault("fleet-rot-k") { t in
                let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
                let k = try Vault.create(at: t.path, client: client, fleet: .etcd())
                let join = #expect(throws: VaultError.self) {
                    try k.joinFleetGroup(
                        group, keyFile: keyFile, settings: FleetSettings(endpoints: try TestCluster.require()))
                }
                #expect(join?.message.contains("rotated since") == true, "\(String(describing: join))")
                #expect(!FileManager.default.fileExists(atPath: t.path + "/groups/" + group.rawValue))
            }
            #expect(try a.fleetGroupMachines(group).count == 2)
        }
    }

    @Test func aMachineAwayDuringTwoRotationsTakesBothAndANewKeyFileJoins() throws {
        try withThreeHosts { a, b, r, group, _ in
            let db = try key("db", group)
            try a.set(Data("P1".utf8), for: db)
            #expect(try b.data(for: db) == Data("P1".utf8))
            #expect(try r.data(for: db) == Data("P1".utf8))
            // Two rotations while b and r read nothing; a kept version goes through both.
            try a.set(Data("P2".utf8), for: db)
            #expect(try a.rotateFleetGroup(group).generation == 2)
            try a.set(Data("P3".utf8), for: db)
            let second = try a.rotateFleetGroup(group)
            #expect(second.generation == 3 && second.kept.count == 3 && second.revoked.isEmpty)
            #expect(second.versionsResealed >= 1, "\(second)")
            #expect(try b.data(for: db) == Data("P3".utf8))
            #expect(try r.data(for: db) == Data("P3".utf8))
            // The versions written under generations 1 and 2 open on a machine that holds 2 and 3.
            #expect(try b.data(for: db, version: 1) == Data("P1".utf8))
            #expect(try b.data(for: db, version: 2) == Data("P2".utf8))
            try r.set(Data("P4".utf8), for: db)
            #expect(try b.data(for: db) == Data("P4".utf8))
            // A key file exported now joins, and that machine is in the next rotation.
            let fresh = try a.exportFleetGroupKey(group).unprotectedCopy()
            try withTemporaryVault("fleet-rot-n") { t in
                let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
                let n = try Vault.create(at: t.path, client: client, fleet: .etcd())
                try n.joinFleetGroup(
                    group, keyFile: fresh, settings: FleetSettings(endpoints: try TestCluster.require()))
                #expect(try n.data(for: db) == Data("P4".utf8))
                #expect(try a.rotateFleetGroup(group).kept.count == 4)
                #expect(try n.data(for: db) == Data("P4".utf8))
            }
        }
    }

    /// Online: a long-lived handle on another machine writes all through two rotations (a write every
    /// 10 ms; more items than one batch seals again), and nothing it wrote is lost or fails.
    @Test func anotherMachineWritesAllThroughARotation() throws {
        try withThreeHosts { a, b, _, group, _ in
            b.requireFreshFleetReads(false)
            let items = try (0..<40).map { try key("item\($0)", group) }
            for (n, item) in items.enumerated() { try a.set(Data("value \(n)".utf8), for: item) }
            let counter = try key("counter", group)
            try b.set(Data("0".utf8), for: counter)
            let writer = FleetTestSupport.ContinuousWriter(b, item: counter, interval: 10_000)
            // The writer under way before the rotations, and still after them (on a loaded machine its
            // first write can take longer than both rotations).
            #expect(FleetTestSupport.eventually(within: 30) { writer.written() > 0 }, "b wrote before the rotations")
            let first = try a.rotateFleetGroup(group)
            let second = try a.rotateFleetGroup(group)
            let afterRotations = writer.written()
            #expect(FleetTestSupport.eventually(within: 30) { writer.written() > afterRotations + 1 })
            let (last, errors) = writer.stop()
            #expect(errors.isEmpty, "\(errors)")
            #expect(first.generation == 2 && second.generation == 3)
            #expect(first.itemsLeft == 0 && second.itemsLeft == 0, "\(first) \(second)")
            #expect(last > 0, "b wrote during the rotations")
            #expect(try a.data(for: counter) == Data(String(last).utf8))
            for (n, item) in items.enumerated() {
                #expect(try a.data(for: item) == Data("value \(n)".utf8))
                #expect(try b.data(for: item) == Data("value \(n)".utf8))
            }
        }
    }

    /// A machine that has not taken a rotation yet takes it before a resync or a removal decides what
    /// etcd holds: nothing sealed under the new key is taken for damage and removed.
    @Test func aResyncOnAMachineBehindTheRotationTakesItFirstAndRemovesNothing() throws {
        try withThreeHosts { a, b, _, group, _ in
            let db = try key("db", group)
            try a.set(Data("P1".utf8), for: db)
            #expect(try b.data(for: db) == Data("P1".utf8))
            _ = try a.rotateFleetGroup(group)
            let report = try b.resyncFleetGroup(group, acceptingRollback: true)
            #expect(report.removedCount == 0 && report.itemCount == 1, "\(report)")
            #expect(try a.data(for: db) == Data("P1".utf8))
            #expect(try b.data(for: db) == Data("P1".utf8))
            _ = try a.rotateFleetGroup(group)
            #expect(try b.removeFleetGroupEverywhere(group) == 1)
            #expect(try a.data(for: db) == nil)
            let removed = #expect(throws: VaultError.self) {
                _ = try a.copyMatching(
                    .genericPassword(service: "db", account: "app", group: group), returning: [.data])
            }
            #expect(removed?.message.contains("removed from the fleet") == true, "\(String(describing: removed))")
        }
    }

    /// Two machines rotate at once: each rotation is whole or not made, and every machine reads on.
    @Test func twoRotationsAtOnceLeaveOneKeyThatEveryMachineTakes() throws {
        try withThreeHosts { a, b, r, group, _ in
            let db = try key("db", group)
            try a.set(Data("P1".utf8), for: db)
            let outcomes = Mutex<[Result<FleetRotation, VaultError>]>([])
            let done = DispatchGroup()
            for vault in [a, b] {
                DispatchQueue.global().async(group: done) {
                    let outcome = Result { () throws(VaultError) in try vault.rotateFleetGroup(group) }
                    outcomes.withLock { $0.append(outcome) }
                }
            }
            done.wait()
            let results = outcomes.withLock { $0 }
            let made = results.compactMap { try? $0.get() }
            #expect(!made.isEmpty, "\(results)")
            for case .failure(let error) in results {
                #expect(error.message.contains("rotated on another machine"), "\(error)")
            }
            for vault in [a, b, r] { #expect(try vault.data(for: db) == Data("P1".utf8)) }
            #expect(try a.rotateFleetGroup(group).generation == UInt32(2 + made.count))
            for vault in [a, b, r] { #expect(try vault.data(for: db) == Data("P1".utf8)) }
        }
    }

    /// A key holder that gives this machine another public key in etcd's list (to get the next
    /// rotation's key in its name) is refused by this machine at its next complete refresh.
    @Test func aListOfMachinesThatGivesThisMachineAnotherKeyIsRefused() throws {
        try withThreeHosts { a, b, _, group, keyFile in
            let name = try GroupName(group.rawValue)
            let sealer = try FleetManifestKey(key: try ReplicatedGroupKey(exported: keyFile, group: name), group: name)
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: try TestCluster.require()))
            let machinesKey = try FleetTestSupport.etcdRoot(of: group, in: a) + Array("machines".utf8)
            var machines = try sealer.openMachines(try #require(try etcd.range(machinesKey).keyValues.first).value)
            let bID = try #require(try b.fleetGroupMachines(group).first(where: \.isThisMachine)).id
            let index = try #require(machines.firstIndex { $0.idHex == bID })
            machines[index].publicKey = try SealedBox.keyPair().publicKey
            try etcd.put(machinesKey, try sealer.seal(machines))
            let refused = #expect(throws: VaultError.self) {
                _ = try b.resyncFleetGroup(group, acceptingRollback: false)
            }
            #expect(refused?.message.contains("another public key") == true, "\(String(describing: refused))")
        }
    }

    /// Each local system call of a rotation failing in turn (what a crash there leaves on the machine
    /// that rotates: before or after etcd took the rotation, before or after its own `group.key`): every
    /// machine reads every item afterwards, and the next rotation goes through.
    @Test func aRotationStoppedAtAnyLocalStepLeavesEveryItemReadableEverywhere() throws {
        try withThreeHosts { a, b, r, group, _ in
            let items = try (0..<3).map { try key("s\($0)", group) }
            for (n, item) in items.enumerated() { try a.set(Data("v\(n)".utf8), for: item) }
            let counting = FaultPlan.counting()
            try FaultInjection.withPlan(counting) { _ = try a.rotateFleetGroup(group) }
            var injected = 0
            for operation in SystemOperation.allCases where counting.count(of: operation) > 0 {
                for occurrence in 1...min(counting.count(of: operation), 2) {
                    let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                    _ = try? FaultInjection.withPlan(plan) { try a.rotateFleetGroup(group) }
                    injected += plan.injectedCount
                    for vault in [a, b, r] {
                        for (n, item) in items.enumerated() {
                            #expect(try vault.data(for: item) == Data("v\(n)".utf8), "\(operation) #\(occurrence)")
                        }
                    }
                }
            }
            #expect(injected > 5, "\(injected)")
            _ = try a.rotateFleetGroup(group)
            for vault in [a, b, r] {
                for (n, item) in items.enumerated() { #expect(try vault.data(for: item) == Data("v\(n)".utf8)) }
            }
        }
    }

    @Test func revokingNamesOneKnownMachineOtherThanThisOne() throws {
        try withThreeHosts { a, _, _, group, _ in
            let me = try #require(try a.fleetGroupMachines(group).first(where: \.isThisMachine))
            let itself = #expect(throws: VaultError.self) { _ = try a.rotateFleetGroup(group, revoking: [me.id]) }
            #expect(itself?.message.contains("cannot revoke itself") == true, "\(String(describing: itself))")
            let unknown = #expect(throws: VaultError.self) { _ = try a.rotateFleetGroup(group, revoking: ["ffffffff"]) }
            #expect(unknown?.message.contains("no machine is named ffffffff") == true, "\(String(describing: unknown))")
            // Every host has the same name here: a name that several machines have names none.
            let host = me.hostName
            let several = #expect(throws: VaultError.self) { _ = try a.rotateFleetGroup(group, revoking: [host]) }
            #expect(several?.message.contains("3 machines are named") == true, "\(String(describing: several))")
            #expect(try a.fleetGroupMachines(group).count == 3, "nothing was changed")
        }
    }
}
