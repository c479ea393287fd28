import Foundation
import Synchronization
import Testing
import Vault
import VaultCrypto
import VaultEtcd
import VaultFleet
import VaultStore
import VaultSystem
import VaultTestSupport

/// Fleet groups through the Swift API: two vaults on this machine stand for two hosts, sharing one
/// group through the test cluster.
@Suite(.serialized) struct FleetGroupTests {

    let group = try! AccessGroup("fleet")

    func client() throws -> Client {
        try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
    }

    /// Two vaults, the first with a new fleet group and the second joined to it (each group's
    /// name in etcd's eyes is its id: a fresh name per test run is not needed).
    func withTwoHosts<R>(_ body: (Vault, Vault, String) throws -> R) throws -> R {
        let endpoints = try TestCluster.require()
        return try FleetTestSupport.withTwoHosts(group, a: endpoints, b: endpoints, label: "fleet") { a, b in
            try body(a, b, endpoints.joined(separator: ","))
        }
    }

    /// Whether `condition` holds within 3 s: a long-lived handle sees another host's write once its
    /// watch reports it (milliseconds), or at its once-a-second check.
    func eventually(_ condition: () throws -> Bool) throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(3)
        while true {
            if try condition() { return true }
            if ContinuousClock.now > deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    func key(_ service: String) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    @Test func aPutOnOneHostIsReadOnTheOtherAndUpdatesAndRemovesFollow() throws {
        try withTwoHosts { a, b, _ in
            try a.set(Data("first".utf8), for: try key("db"))
            #expect(try eventually { try b.data(for: try key("db")) == Data("first".utf8) })
            try b.set(Data("second".utf8), for: try key("db"))
            // The other host's long-lived handle checks etcd before each read.
            let started = Date()
            var seen: Data?
            while Date().timeIntervalSince(started) < 3 {
                seen = try a.data(for: try key("db"))
                if seen == Data("second".utf8) { break }
                Thread.sleep(forTimeInterval: 0.05)
            }
            #expect(seen == Data("second".utf8))
            print(
                "FIGURE fleet-propagation: an update seen by the other host's handle after \(Int(Date().timeIntervalSince(started) * 1000)) ms"
            )
            #expect(try b.remove(try key("db")))
            #expect(try eventually { try a.data(for: try key("db")) == nil })
        }
    }

    /// etcd applied the write, then this machine failed to record it (its high-water mark's flush
    /// fails): the error says the change reached etcd, and both hosts read it.
    @Test func aLocalFailureAfterEtcdAppliedTheWriteSaysSo() throws {
        try withTwoHosts { a, b, _ in
            try a.set(Data("first".utf8), for: try key("db"))
            a.requireFreshFleetReads(true)
            _ = try a.data(for: try key("db"))
            // The next flush of this task is the mark's, right after etcd's answer (nothing changed since
            // the read, so the write's refresh caches nothing).
            let plan = FaultPlan(.fsync, occurrence: 1, effect: .fail(.ioError))
            let failed = #expect(throws: VaultError.self) {
                try FaultInjection.withPlan(plan) { try a.set(Data("second".utf8), for: try key("db")) }
            }
            #expect(plan.injectedCount == 1)
            #expect(failed?.message.contains("the change reached etcd") == true, "\(failed?.message ?? "")")
            #expect(failed?.message.contains("fleet group fleet") == true)
            #expect(try a.data(for: try key("db")) == Data("second".utf8))
            #expect(try eventually { try b.data(for: try key("db")) == Data("second".utf8) })
        }
    }

    @Test func aDuplicateAddOnTheOtherHostIsRefused() throws {
        try withTwoHosts { a, b, _ in
            var attributes = ItemAttributes()
            attributes.service = "api"
            attributes.account = "ci"
            attributes.accessGroup = group
            try a.add(.genericPassword, attributes: attributes, data: Data("one".utf8))
            let error = #expect(throws: VaultError.self) {
                try b.add(.genericPassword, attributes: attributes, data: Data("two".utf8))
            }
            #expect(error?.status == .duplicateItem, "\(String(describing: error))")
            #expect(try b.data(for: try ItemKey(service: "api", account: "ci", group: group)) == Data("one".utf8))
        }
    }

    @Test func concurrentIncrementsOnBothHostsLoseNothing() throws {
        try withTwoHosts { a, b, _ in
            let counter = try key("counter")
            try a.set(Data("0".utf8), for: counter)
            let rounds = 25
            let failures = Mutex<[String]>([])
            let done = DispatchGroup()
            for vault in [a, b] {
                for _ in 0..<2 {
                    done.enter()
                    Thread {
                        for _ in 0..<rounds {
                            do {
                                _ = try vault.modify(counter) { old in
                                    Data(
                                        String((Int(String(decoding: old ?? Data("0".utf8), as: UTF8.self)) ?? 0) + 1)
                                            .utf8)
                                }
                            } catch {
                                failures.withLock { $0.append("\(error)") }
                            }
                        }
                        done.leave()
                    }.start()
                }
            }
            done.wait()
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { Array($0.prefix(3)) })")
            // Fresh reads: a long-lived handle otherwise answers from its cache while its watch vouches
            // for it, and the other host's last increment may still be on its way (milliseconds): such
            // a read once showed 99, a lag and not a lost increment. Read from etcd, a lost one shows.
            a.requireFreshFleetReads(true)
            b.requireFreshFleetReads(true)
            let final = String(decoding: try a.data(for: counter) ?? Data(), as: UTF8.self)
            #expect(final == String(4 * rounds), "2 hosts × 2 threads × \(rounds) increments")
            #expect(String(decoding: try b.data(for: counter) ?? Data(), as: UTF8.self) == final)
        }
    }

    @Test func thisDeviceOnlyItemsAreRefusedInAFleetGroup() throws {
        try withTwoHosts { a, _, _ in
            let error = #expect(throws: VaultError.self) {
                try a.set(Data("local".utf8), for: try key("device"), accessibility: .afterFirstUnlockThisDeviceOnly)
            }
            #expect(error?.status == .param, "\(String(describing: error))")
            let device = try key("device")
            let stored = try a.data(for: device)
            #expect(stored == nil)
        }
    }

    /// The `Security` module (a separate process, as a service written for Apple platforms) reads and
    /// writes a fleet group like any other: SecItemCopyMatching of an item the other host put, and a
    /// SecItemUpdate the other host then reads.
    @Test func theSecurityModuleUsesAFleetGroup() throws {
        try withTwoHosts { a, b, _ in
            try a.set(Data("from a".utf8), for: try key("web"))
            let peer = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
                .appendingPathComponent("vault-security-peer").path
            func run(_ arguments: [String], input: String = "") throws -> (status: Int32, output: String) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: peer)
                process.arguments = arguments
                process.environment = [
                    "VAULT_DIR": b.path, "VAULT_APP_ID": "svc", "VAULT_ACCESS_GROUPS": group.rawValue,
                    "PATH": "/usr/bin:/bin", "HOME": "/nonexistent",
                ]
                let inputPath = NSTemporaryDirectory() + "/fleet-peer-in-\(UUID().uuidString)"
                let outputPath = inputPath + ".out"
                try Data(input.utf8).write(to: URL(fileURLWithPath: inputPath))
                _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
                defer {
                    try? FileManager.default.removeItem(atPath: inputPath)
                    try? FileManager.default.removeItem(atPath: outputPath)
                }
                process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: inputPath))
                process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
                try process.run()
                process.waitUntilExit()
                let output = String(decoding: FileManager.default.contents(atPath: outputPath) ?? Data(), as: UTF8.self)
                return (process.terminationStatus, output)
            }
            let got = try run(["get", "web", "app", group.rawValue])
            #expect(got.status == 0 && got.output == "from a", "\(got)")
            #expect(try run(["put", "web", "app", group.rawValue], input: "from b's SecItemUpdate").status == 0)
            #expect(
                try eventually { try a.data(for: try key("web")) == Data("from b's SecItemUpdate".utf8) },
                "a's long-lived handle sees it once its watch reports it")
        }
    }

    @Test func anItemTooLargeForEtcdIsRefusedClearly() throws {
        try withTwoHosts { a, b, _ in
            let error = #expect(throws: VaultError.self) {
                try a.set(Data(repeating: 7, count: 1_100_000), for: try key("big"))
            }
            #expect(error?.status == .param, "\(String(describing: error))")
            #expect(error?.message.contains("at most 786432 bytes") == true, "\(String(describing: error))")
            let stored = try b.data(for: try key("big"))
            #expect(stored == nil)
            // Below the limit is fine. The other host's handle read the group within the last second, so
            // its watch may vouch for its cache until the put's event arrives.
            try a.set(Data(repeating: 7, count: 500_000), for: try key("big"))
            #expect(try eventually { try b.data(for: try key("big"))?.count == 500_000 })
        }
    }

    /// With etcd out of reach (the second host's settings name an endpoint with no listener), reads
    /// are served from the cache, writes fail as not available and change nothing anywhere.
    @Test func withEtcdOutOfReachReadsComeFromTheCacheAndWritesChangeNothing() throws {
        try withTwoHosts { a, b, _ in
            try a.set(Data("cached".utf8), for: try key("db"))
            #expect(try eventually { try b.data(for: try key("db")) == Data("cached".utf8) })
            // The settings file of b's group, pointed at a port with no listener, and b opened again.
            let vaultPath = b.path
            let settings = vaultPath + "/groups/fleet/fleet.conf"
            try "endpoint=http://127.0.0.1:9\n".write(toFile: settings, atomically: true, encoding: .utf8)
            let reopened = try Vault.open(at: vaultPath, client: try client(), fleet: .etcd())
            #expect(try reopened.data(for: try key("db")) == Data("cached".utf8), "served from the cache")
            let error = #expect(throws: VaultError.self) { try reopened.set(Data("lost?".utf8), for: try key("db")) }
            #expect(error?.status == .notAvailable, "\(String(describing: error))")
            #expect(try reopened.data(for: try key("db")) == Data("cached".utf8), "nothing changed here")
            #expect(try a.data(for: try key("db")) == Data("cached".utf8), "nothing changed in etcd")
        }
    }

    /// Settings changed to send a user's password over plain http off this machine: refused on use,
    /// before anything is sent; with the lab's `plain-http-credentials=yes`, the group is used again.
    @Test func settingsThatWouldSendThePasswordInClearTextAreRefusedOnUse() throws {
        try withTwoHosts { a, b, _ in
            try a.set(Data("cached".utf8), for: try key("db"))
            #expect(try eventually { try b.data(for: try key("db")) == Data("cached".utf8) })
            let directory = b.path + "/groups/fleet"
            let passwordFile = directory + "/../../etcd-password"
            try "not-sent\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile)
            let plain = "endpoint=http://192.0.2.1:2379\nuser=app\npassword-file=\(passwordFile)\n"
            try plain.write(toFile: directory + "/fleet.conf", atomically: true, encoding: .utf8)
            let reopened = try Vault.open(at: b.path, client: try client(), fleet: .etcd())
            let error = #expect(throws: VaultError.self) { try reopened.data(for: try key("db")) }
            #expect(error?.status == .permissionDenied, "\(String(describing: error))")
            #expect(error?.message.contains("clear text to http://192.0.2.1:2379") == true)
            #expect(error?.message.contains("nothing was sent") == true, "\(String(describing: error))")
            // The lab's setting: etcd is not there, so the read comes from the cache.
            try (plain + "plain-http-credentials=yes\n").write(
                toFile: directory + "/fleet.conf", atomically: true, encoding: .utf8)
            let lab = try Vault.open(at: b.path, client: try client(), fleet: .etcd())
            #expect(try lab.data(for: try key("db")) == Data("cached".utf8))
        }
    }

    /// A first endpoint that is not etcd (a proxy's HTML error page) made every read and write of the
    /// group fail, though the members after it were healthy: both now go through the members.
    @Test func anEndpointThatIsNotEtcdBeforeTheMembersIsPassed() throws {
        try withTwoHosts { a, b, endpoints in
            let html = FakeGateway.Page(status: 502, type: "text/html", body: "<html>502 Bad Gateway</html>")
            let proxy = try FakeGateway(pages: ["/v3/kv/range": html, "/v3/kv/txn": html, "/v3/watch": html])
            let settings = ([proxy.endpoint] + endpoints.split(separator: ",")).map { "endpoint=\($0)\n" }.joined()
            try settings.write(toFile: b.path + "/groups/fleet/fleet.conf", atomically: true, encoding: .utf8)
            let reopened = try Vault.open(at: b.path, client: try client(), fleet: .etcd(watching: false))
            try reopened.set(Data("through the members".utf8), for: try key("proxied"))
            #expect(try a.data(for: try key("proxied")) == Data("through the members".utf8))
            try a.set(Data("back".utf8), for: try key("proxied"))
            let fresh = try Vault.open(at: b.path, client: try client(), fleet: .etcd(watching: false))
            #expect(try fresh.data(for: try key("proxied")) == Data("back".utf8))
            #expect(fresh.fleetCacheStatus(of: try AccessGroup("fleet"))?.isStale == false)
        }
    }

    @Test func etcdHoldsNoPlaintextAndAMovedValueFailsAuthentication() throws {
        try withTwoHosts { a, b, endpoints in
            let secret = "plaintext-secret-\(UUID().uuidString)"
            try a.set(Data(secret.utf8), for: try key("service-name-visible?"))
            try a.set(Data("other".utf8), for: try key("second"))
            let etcd = EtcdClient(
                try EtcdClient.Configuration(endpoints: endpoints.split(separator: ",").map(String.init)))
            let everything = try etcd.range(prefix: Array("/vault/".utf8))
            for keyValue in everything.keyValues {
                let text = String(decoding: keyValue.key + keyValue.value, as: UTF8.self)
                #expect(!text.contains(secret) && !text.contains("service-name-visible"), "plaintext in etcd")
            }
            // One item's value put under the other's key: it fails authentication on the next refresh.
            // The group's own two items (other tests write to the cluster meanwhile).
            let items = try FleetTestSupport.etcdRoot(of: try AccessGroup("fleet"), in: a) + Array("items/".utf8)
            let mine = everything.keyValues.filter { $0.key.starts(with: items) }
            try #require(mine.count == 2)
            try etcd.put(mine[0].key, mine[1].value)
            let error = #expect(throws: VaultError.self) { _ = try b.allKeys() }
            #expect(error?.status == .decode, "\(String(describing: error))")
        }
    }

    /// The registration held the group's name in the clear (`name=…`); it holds a keyed hash of it
    /// now. An earlier build's registration is accepted on join and replaced; a key file joined under
    /// another name is refused either way.
    @Test func theRegistrationDoesNotNameTheGroupAndAnOlderOneIsReplacedOnJoin() throws {
        let endpoints = try TestCluster.require()
        let named = try AccessGroup("named-\(UUID().uuidString.prefix(8).lowercased())")
        try FleetTestSupport.withTwoHosts(named, a: endpoints, b: endpoints, label: "fleet-name") { a, _ in
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
            let metaKey = try FleetTestSupport.etcdRoot(of: named, in: a) + Array("meta".utf8)
            let registration = String(
                decoding: try #require(try etcd.range(metaKey).keyValues.first).value, as: UTF8.self)
            #expect(!registration.contains(named.rawValue) && registration.contains("name-check="), "\(registration)")
            let check = try #require(registration.split(separator: "\n").first { $0.hasPrefix("check=") })
            try etcd.put(metaKey, Array("vault fleet group v1\nname=\(named.rawValue)\n\(check)\n".utf8))
            let keyFile = try a.exportFleetGroupKey(named).unprotectedCopy()
            try withTemporaryVault("fleet-name-c") { c in
                let client = try Client(applicationIdentifier: "svc", accessGroups: [named.rawValue, "renamed"])
                let third = try Vault.create(at: c.path, client: client, fleet: .etcd())
                try third.joinFleetGroup(named, keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
                #expect(try etcd.range(metaKey).keyValues.first?.value == Array(registration.utf8), "replaced")
                // Under another name, the key file does not match.
                let error = #expect(throws: VaultError.self) {
                    try third.joinFleetGroup(
                        try AccessGroup("renamed"), keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
                }
                #expect(error?.status == .param || error?.status == .decode, "\(String(describing: error))")
            }
        }
    }

    /// A key file is written sealed (a passphrase here), opens with its passphrase only, and a key file
    /// in the clear that an earlier build wrote still joins.
    @Test func aKeyFileIsSealedAndOpensWithItsPassphraseAndAnEarlierClearOneStillJoins() throws {
        try withTwoHosts { a, _, endpoints in
            let settings = FleetSettings(endpoints: endpoints.split(separator: ",").map(String.init))
            try withTemporaryVault("fleet-sealed-key") { t in
                let path = t.root + "/fleet.key"
                let passphrase = { (text: String) throws -> BackupKey in
                    .passphrase(try SecureBytes(copyingSecret: Array(text.utf8)), limits: .minimum)
                }
                try a.exportFleetGroupKey(group, to: path, sealedWith: try passphrase("right"))
                #expect(try Vault.sealingOfFleetGroupKeyFile(at: path) == .passphrase)
                let sealed = try Data(contentsOf: URL(fileURLWithPath: path))
                let clear = try a.exportFleetGroupKey(group).unprotectedCopy()
                #expect(sealed.range(of: Data(clear.suffix(32))) == nil, "no key bytes in the clear")
                let c = try Vault.create(at: t.path + "-c", client: try client(), fleet: .etcd())
                defer { try? FileManager.default.removeItem(atPath: t.path + "-c") }
                let unopened = #expect(throws: VaultError.self) {
                    try c.joinFleetGroup(group, keyFileAt: path, settings: settings)
                }
                #expect(unopened?.status == .param, "\(String(describing: unopened))")
                let wrong = #expect(throws: VaultError.self) {
                    try c.joinFleetGroup(
                        group, keyFileAt: path, settings: settings, openingWith: try passphrase("wrong"))
                }
                #expect(wrong?.status == .authFailed, "\(String(describing: wrong))")
                try c.joinFleetGroup(group, keyFileAt: path, settings: settings, openingWith: try passphrase("right"))
                try a.set(Data("sealed".utf8), for: try key("db"))
                c.requireFreshFleetReads(true)
                #expect(try c.data(for: try key("db")) == Data("sealed".utf8))
                // An earlier build's export: the keys in the clear, 0600.
                let clearPath = t.root + "/clear.key"
                try #require(
                    FileManager.default.createFile(
                        atPath: clearPath, contents: Data(clear), attributes: [.posixPermissions: 0o600]))
                #expect(try Vault.sealingOfFleetGroupKeyFile(at: clearPath) == nil)
                let d = try Vault.create(at: t.path + "-d", client: try client(), fleet: .etcd())
                defer { try? FileManager.default.removeItem(atPath: t.path + "-d") }
                try d.joinFleetGroup(group, keyFileAt: clearPath, settings: settings)
                d.requireFreshFleetReads(true)
                #expect(try d.data(for: try key("db")) == Data("sealed".utf8))
            }
        }
    }

    /// `group rm --force` left etcd holding every key and the other machines reading on. Removed
    /// everywhere, etcd keeps only the sealed record of who removed the group; the other host refuses
    /// it naming that, a kept key file joins nothing, and the CLI says exactly what went.
    @Test func aGroupRemovedEverywhereLeavesEtcdAndTheOtherMachinesRefuseIt() throws {
        let endpoints = try TestCluster.require()
        let removed = try AccessGroup("removed-\(UUID().uuidString.prefix(8).lowercased())")
        try FleetTestSupport.withTwoHosts(removed, a: endpoints, b: endpoints, label: "fleet-rm") { a, b in
            let db = try ItemKey(service: "db", account: "app", group: removed)
            try a.set(Data("v1".utf8), for: db)
            try a.set(Data("v2".utf8), for: db)
            try a.set(Data("other".utf8), for: try ItemKey(service: "other", account: "app", group: removed))
            b.requireFreshFleetReads(true)
            #expect(try b.data(for: db) == Data("v2".utf8))
            let root = try FleetTestSupport.etcdRoot(of: removed, in: a)
            let keyFile = try a.exportFleetGroupKey(removed).unprotectedCopy()
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
            let versions = Array(root.dropLast()) + Array(".versions/".utf8)
            #expect(try !etcd.range(prefix: versions).keyValues.isEmpty, "the history is in etcd before")
            #expect(try a.removeFleetGroupEverywhere(removed) == 2)
            let left = try etcd.range(prefix: root).keyValues.map {
                String(decoding: $0.key.dropFirst(root.count), as: UTF8.self)
            }
            #expect(left == ["removed"], "\(left)")
            #expect(try etcd.range(prefix: versions).keyValues.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: a.path + "/groups/\(removed.rawValue)"))
            // Not found, naming why (`data(for:)` is nil, as for any item that is not there).
            #expect(try b.data(for: db) == nil)
            let refused = #expect(throws: VaultError.self) {
                _ = try b.copyMatching(
                    .genericPassword(service: "db", account: "app", group: removed), returning: [.data])
            }
            #expect(refused?.status == .itemNotFound, "\(String(describing: refused))")
            #expect(
                refused?.message.contains("removed from the fleet (etcd included) by uid") == true,
                "\(String(describing: refused))")
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            let get = try FleetTestSupport.run(
                vault, ["--vault", b.path, "--group", removed.rawValue, "get", "db", "app"], input: "",
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            #expect(get.status == 1 && get.errors.contains("removed from the fleet"), "\(get)")
            // A put says so too (it said "not found" alone).
            let put = try FleetTestSupport.run(
                vault, ["--vault", b.path, "--group", removed.rawValue, "put", "db", "app"], input: "new",
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            #expect(put.status == 1 && put.errors.contains("removed from the fleet"), "\(put.errors)")
            // A client of several groups, searching them all: the other group's item is found, and an item
            // that is nowhere is refused naming the removal, not skipped as a group the vault lacks.
            let local = try AccessGroup("local")
            try b.createGroup(local, unixGroup: nil)
            let both = try Vault.open(
                at: b.path,
                client: try Client(applicationIdentifier: "svc", accessGroups: [removed.rawValue, "local"]),
                fleet: .etcd(watching: false))
            try both.set(Data("here".utf8), for: try ItemKey(service: "kept", account: "app", group: local))
            #expect(try both.data(for: try ItemKey(service: "kept", account: "app")) == Data("here".utf8))
            let nowhere = #expect(throws: VaultError.self) {
                _ = try both.copyMatching(.genericPassword(service: "db", account: "app"), returning: [.data])
            }
            #expect(
                nowhere?.message.contains("removed from the fleet") == true, "\(String(describing: nowhere))")
            #expect(try b.removeGroup(removed, force: true) >= 0)
            let rejoined = #expect(throws: VaultError.self) {
                try b.joinFleetGroup(removed, keyFile: keyFile, settings: FleetSettings(endpoints: endpoints))
            }
            #expect(rejoined != nil, "a kept key file joins nothing")
        }
    }

    /// Keys that something else put under a group's prefix (here 6,000, more than a group can hold,
    /// outside `items/` and between the group's own keys) are never read: a command's read, a complete
    /// refresh (a resync, a join) and a fresh-only read all go on, where a complete refresh was refused.
    /// A refresh's read of the tree's range answered with more than the client takes (keys that
    /// something else put under `tree/`, with large values: a proxy gives the answer here) is read
    /// again, not taken for etcd being out of reach.
    @Test func aTreeRangeTooLargeToReadIsReadAgain() throws {
        let endpoints = try TestCluster.require()
        let proxy = try InterposingProxy(upstream: endpoints[0])
        let group = try AccessGroup("oversize-\(UUID().uuidString.prefix(8).lowercased())")
        // A deadline long enough for the answer on a loaded machine: what is tested is its size, not its time.
        try FleetTestSupport.withTwoHosts(
            group, a: endpoints, b: [proxy.endpoint], readDeadlineB: 30_000, label: "fleet-ov"
        ) { a, b in
            let db = try ItemKey(service: "db", account: "app", group: group)
            try a.set(Data("one".utf8), for: db)
            b.requireFreshFleetReads(true)
            #expect(try b.data(for: db) == Data("one".utf8))
            try a.set(Data("two".utf8), for: db)
            try proxy.armOversize()
            #expect(try b.data(for: db) == Data("two".utf8), "a fresh-only read, whose refresh read by name")
            #expect(try proxy.oversized() == 1)
        }
    }

    @Test func strayKeysUnderTheGroupsPrefixAreNeverRead() throws {
        let endpoints = try TestCluster.require()
        let stray = try AccessGroup("stray-\(UUID().uuidString.prefix(8).lowercased())")
        try FleetTestSupport.withTwoHosts(stray, a: endpoints, b: endpoints, label: "fleet-stray") { a, b in
            let db = try ItemKey(service: "db", account: "app", group: stray)
            try a.set(Data("kept".utf8), for: db)
            let root = try FleetTestSupport.etcdRoot(of: stray, in: a)
            let etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
            for batch in 0..<60 {
                _ = try etcd.transaction(
                    compare: [],
                    success: (0..<100).map { index in
                        .put(key: root + Array("junk/\(batch)-\(index)".utf8), value: Array(repeating: 0x6a, count: 64))
                    })
            }
            try etcd.put(root + Array("n-junk".utf8), Array("between the group's own keys".utf8))
            // Among the manifest's tree (under its epoch, and another's), which the read of its range brings
            // and leaves out.
            let epoch = String(
                decoding: try #require(
                    try etcd.range(prefix: root + Array("tree/".utf8), keysOnly: true).keyValues.first?.key.dropFirst(
                        root.count + 5
                    ).prefix(16)), as: UTF8.self)
            for name in ["tree/x", "tree/\(epoch)/zz", "tree/\(epoch)/00-junk", "tree/\(epoch)/00/zz", "tree/0/00"] {
                try etcd.put(root + Array(name.utf8), Array(repeating: 0x6a, count: 64))
            }
            defer {
                _ = try? etcd.transaction(
                    compare: [],
                    success: [.delete(key: root + Array("junk/".utf8), rangeEnd: root + Array("junk0".utf8))])
                _ = try? etcd.transaction(
                    compare: [],
                    success: [.delete(key: root + Array("tree/".utf8), rangeEnd: root + Array("tree0".utf8))])
            }
            b.requireFreshFleetReads(true)
            #expect(try b.data(for: db) == Data("kept".utf8), "a fresh-only read")
            b.requireFreshFleetReads(false)
            let report = try b.resyncFleetGroup(stray, acceptingRollback: false)
            #expect(report.itemCount == 1, "a complete refresh")
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            let get = try FleetTestSupport.run(
                vault, ["--vault", b.path, "--group", stray.rawValue, "get", "db", "app"], input: "",
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            #expect(get.status == 0 && get.output == "kept", "\(get)")
            try a.set(Data("newer".utf8), for: db)
            b.requireFreshFleetReads(true)
            #expect(try b.data(for: db) == Data("newer".utf8))
            // More keys under `tree/` than a tree has, of another epoch: the root's epoch is read alone; then
            // more under the root's epoch too: its nodes and leaves are read by name.
            var extra = 0
            for prefix in ["tree/0000000000000000/", "tree/\(epoch)/"] {
                extra += 1
                try a.set(Data("more".utf8), for: try ItemKey(service: "db\(extra)", account: "app", group: stray))
                for batch in 0..<42 {  // 4,200 keys: more than a tree has (64 nodes and 4,096 leaves)
                    _ = try etcd.transaction(
                        compare: [],
                        success: (0..<100).map { index in
                            .put(
                                key: root + Array("\(prefix)zz-\(batch)-\(index)".utf8),
                                value: Array(repeating: 0x6a, count: 8))
                        })
                }
                #expect(try b.resyncFleetGroup(stray, acceptingRollback: false).itemCount == 1 + extra)
            }
            try a.set(Data("newest".utf8), for: db)
            #expect(try b.data(for: db) == Data("newest".utf8))
        }
    }
}
