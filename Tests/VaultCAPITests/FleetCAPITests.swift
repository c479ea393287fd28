import CVaultAPI
import Foundation
import FoundationEssentials
import Glibc
import Synchronization
import Testing
import Vault
import VaultFleet
import VaultTestSupport

@testable import VaultCAPI

/// Fleet groups through the C API: two vaults on this machine stand for two hosts sharing one group
/// through the test cluster (the one `EtcdTestCluster` of the test process). The group is made and
/// joined with the Swift API; its items are then written and read through the C functions.
@Suite(.serialized) struct FleetCAPITests {
    let group = try! AccessGroup("fleet")

    func client() throws -> Client {
        try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
    }

    /// `vault_open` of `path` as the client "svc" with the fleet group: the status and the handle.
    func open(_ path: String) -> (status: Int32, handle: OpaquePointer?) {
        open(path, group: group)
    }

    func put(_ handle: OpaquePointer?, _ account: String, _ text: String) -> Int32 {
        let bytes = Array(text.utf8)
        return vault_put(handle, group.rawValue, "db", account, bytes, UInt64(bytes.count))
    }

    /// `vault_get` with size negotiation: the status and the secret as text.
    func get(_ handle: OpaquePointer?, _ account: String) -> (status: Int32, text: String?) {
        var length: UInt64 = 0
        let asked = vault_get(handle, group.rawValue, "db", account, nil, 0, &length)
        guard asked == Status.ok || asked == Status.bufferTooSmall else { return (asked, nil) }
        var buffer = [UInt8](repeating: 0, count: Int(length))
        let status = vault_get(handle, group.rawValue, "db", account, &buffer, UInt64(buffer.count), &length)
        return (status, status == Status.ok ? String(decoding: buffer.prefix(Int(length)), as: UTF8.self) : nil)
    }

    var lastMessage: String { String(cString: vault_last_error_message()) }

    @Test func theCFunctionsUseAFleetGroupAsAnyOtherAndAWriteWithoutEtcdIsNotAvailable() throws {
        let endpoints = try EtcdTestCluster.require()
        try withTemporaryVault("capi-fleet-a") { a in
            try withTemporaryVault("capi-fleet-b") { b in
                let first = try Vault.create(at: a.path, client: try client(), fleet: .etcd())
                let second = try Vault.create(at: b.path, client: try client(), fleet: .etcd())
                // The library's first vault_open installs the etcd client (nothing in this test does).
                let (openedA, handleA) = open(a.path)
                #expect(openedA == Status.ok, "\(lastMessage)")
                defer { _ = vault_close(handleA) }
                #expect(first.hasFleetSupport)
                try first.createFleetGroup(group, settings: FleetSettings(endpoints: endpoints))
                let key = try first.exportFleetGroupKey(group)
                try second.joinFleetGroup(
                    group, keyFile: key.unprotectedCopy(), settings: FleetSettings(endpoints: endpoints))
                let (openedB, handleB) = open(b.path)
                #expect(openedB == Status.ok, "\(lastMessage)")
                defer { _ = vault_close(handleB) }
                // Each read asks etcd, so that another host's write is seen at once (a long-lived handle's
                // watch would bring it a few milliseconds later).
                #expect(vault_require_fresh_fleet_reads(handleA, 1) == Status.ok)
                #expect(vault_require_fresh_fleet_reads(handleB, 1) == Status.ok)

                // A put through C on one host is read through C and Swift on the other.
                #expect(put(handleA, "app", "from C on a") == Status.ok, "\(lastMessage)")
                #expect(get(handleB, "app").text == "from C on a", "\(lastMessage)")
                let item = try ItemKey(service: "db", account: "app", group: group)
                #expect(try second.data(for: item) == Data("from C on a".utf8))
                // An update through Swift on the other host is seen by the first host's open handle.
                try second.set(Data("from Swift on b".utf8), for: item)
                var secret: UnsafeMutablePointer<UInt8>?
                var length: UInt64 = 0
                #expect(vault_get_secret(handleA, group.rawValue, "db", "app", &secret, &length) == Status.ok)
                if let secret {
                    #expect(
                        String(decoding: UnsafeBufferPointer(start: secret, count: Int(length)), as: UTF8.self)
                            == "from Swift on b")
                }
                #expect(vault_free_secret(secret) == Status.ok)

                // An add of an item the other host has is a duplicate, and changes nothing.
                let other = Array("second add".utf8)
                #expect(
                    vault_add(handleB, group.rawValue, "db", "app", other, UInt64(other.count)) == Status.duplicate)
                #expect(get(handleA, "app").text == "from Swift on b")
                // The listing, and a removal seen on the other host.
                var iterator: OpaquePointer?
                #expect(vault_list(handleB, group.rawValue, &iterator) == Status.ok)
                var listed = vault_item_t()
                #expect(vault_iter_next(iterator, &listed) == Status.ok)
                #expect(String(cString: listed.group) == "fleet" && String(cString: listed.account) == "app")
                #expect(vault_iter_next(iterator, &listed) == Status.notFound)
                #expect(vault_iter_free(iterator) == Status.ok)
                #expect(vault_remove(handleA, group.rawValue, "db", "app") == Status.ok)
                #expect(get(handleB, "app").status == Status.notFound)

                // etcd out of reach for the second host (its settings name a port with no listener):
                // a put is not available and changes nothing anywhere; a get answers from the cache.
                #expect(put(handleA, "app", "kept") == Status.ok)
                #expect(get(handleB, "app").text == "kept")
                try "endpoint=http://127.0.0.1:9\n".write(
                    toFile: b.path + "/groups/fleet/fleet.conf", atomically: true, encoding: .utf8)
                let (reopened, offline) = open(b.path)
                #expect(reopened == Status.ok, "\(lastMessage)")
                defer { _ = vault_close(offline) }
                #expect(put(offline, "app", "lost?") == Status.notAvailable)
                #expect(lastMessage.contains("fleet group fleet"), "\(lastMessage)")
                #expect(String(cString: vault_strerror(Status.notAvailable)).hasPrefix("errSecNotAvailable:"))
                #expect(vault_remove(offline, group.rawValue, "db", "app") == Status.notAvailable)
                #expect(get(offline, "app").text == "kept", "served from the cache")
                var stale: UInt8 = 9
                var knownCurrent: Int64 = 0
                #expect(vault_fleet_cache_status(offline, group.rawValue, &stale, &knownCurrent) == Status.ok)
                #expect(stale == 1 && knownCurrent > 0, "the answer came from the cache, as of then")
                #expect(vault_fleet_cache_status(handleA, group.rawValue, &stale, nil) == Status.ok)
                #expect(stale == 0)
                #expect(vault_fleet_cache_status(offline, "no-such-group", &stale, nil) == Status.notFound)
                #expect(vault_require_fresh_fleet_reads(offline, 1) == Status.ok)
                #expect(get(offline, "app").status == Status.notAvailable, "fresh reads only: not from the cache")
                #expect(get(handleA, "app").text == "kept", "nothing changed in etcd")
            }
        }
    }

    /// Read-modify-write through the C API lost updates on a fleet group (two processes × 100
    /// increments ended at 101). With `vault_put_if_version` (the current version from
    /// `vault_history`, retried when another writer came first), 2 hosts × 2 threads × 15 increments
    /// end at exactly 60.
    @Test func incrementsThroughCheckAndSetLoseNothingAcrossHosts() throws {
        let endpoints = try EtcdTestCluster.require()
        try withTemporaryVault("fleet-capi-cas-a") { a in
            try withTemporaryVault("fleet-capi-cas-b") { b in
                let group = try AccessGroup("cas-\(UInt32.random(in: 0...UInt32.max))")
                let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
                let first = try Vault.create(at: a.path, client: client, fleet: .etcd())
                let second = try Vault.create(at: b.path, client: client, fleet: .etcd())
                let settings = FleetSettings(endpoints: endpoints)
                try first.createFleetGroup(group, settings: settings)
                try second.joinFleetGroup(
                    group, keyFile: try first.exportFleetGroupKey(group).unprotectedCopy(), settings: settings)
                let handles = [open(a.path, group: group), open(b.path, group: group)]
                defer { for handle in handles { _ = vault_close(handle.handle) } }
                #expect(handles.allSatisfy { $0.status == Status.ok })
                let failures = Mutex<[String]>([])
                let done = DispatchSemaphore(value: 0)
                for index in 0..<4 {
                    // The handle's address: a C handle may be used from any thread.
                    let address = Int(bitPattern: handles[index % 2].handle)
                    Thread {
                        let handle = OpaquePointer(bitPattern: address)
                        for _ in 0..<15 {
                            if let failure = increment(handle, group: group) {
                                failures.withLock { $0.append(failure) }
                                break
                            }
                        }
                        done.signal()
                    }.start()
                }
                for _ in 0..<4 { done.wait() }
                #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
                second.requireFreshFleetReads(true)
                let final = try second.data(for: try ItemKey(service: "db", account: "counter", group: group))
                #expect(
                    final == Data("60".utf8), "\(String(describing: final.map { String(decoding: $0, as: UTF8.self) }))"
                )
            }
        }
    }

    /// `vault_open` of `path` as "svc" with `group`.
    func open(_ path: String, group: AccessGroup) -> (status: Int32, handle: OpaquePointer?) {
        var handle: OpaquePointer?
        let name = strdup(group.rawValue)
        defer { free(name) }
        let groups: [UnsafePointer<CChar>?] = [UnsafePointer(name)]
        let status = vault_open(path, "svc", groups, 1, 0, &handle)
        return (status, handle)
    }

    /// One increment of item db/counter: its current version and value, then a put only at that
    /// version, again from the start when another writer came first. Nil, or what went wrong.
    func increment(_ handle: OpaquePointer?, group: AccessGroup) -> String? {
        for _ in 0..<200 {
            var count: UInt64 = 0
            var versions = [vault_version_t](repeating: vault_version_t(), count: 64)
            let listed = vault_history(handle, group.rawValue, "db", "counter", &versions, 64, &count)
            var expected: UInt64 = 0
            var value = 0
            if listed == Status.ok, count > 0, versions[Int(count) - 1].is_current == 1 {
                expected = versions[Int(count) - 1].number
                var secret: UnsafeMutablePointer<UInt8>?
                var length: UInt64 = 0
                let got = vault_get_version(handle, group.rawValue, "db", "counter", expected, &secret, &length)
                guard got == Status.ok, let secret else { continue }  // changed meanwhile: read again
                value =
                    Int(String(decoding: UnsafeBufferPointer(start: secret, count: Int(length)), as: UTF8.self)) ?? -1
                vault_free_secret(secret)
            } else if listed != Status.notFound, listed != Status.ok {
                return "vault_history: \(listed) \(lastMessage)"
            }
            let next = Array(String(value + 1).utf8)
            let put = vault_put_if_version(
                handle, group.rawValue, "db", "counter", next, UInt64(next.count), expected, nil)
            if put == Status.ok { return nil }
            guard put == Status.duplicate else { return "vault_put_if_version: \(put) \(lastMessage)" }
        }
        return "no increment after 200 tries"
    }
}
