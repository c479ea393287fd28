import Foundation
import Testing
import Vault
import VaultCrypto
import VaultEtcd
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import VaultFleet

/// A fleet group's manifest in etcd as a sealed root and shards: a write puts its item's shard alone,
/// a shard that is not the root's is refused, and a manifest in one key (as earlier builds wrote it)
/// is read and turned into shards by the next write or rotation.
@Suite(.serialized) struct FleetManifestTests {
    /// Two hosts of a new fleet group reading fresh, with the group's manifest key and its keys in etcd.
    func withTwoHosts<R>(
        _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup, _ etcd: GroupState) throws -> R
    ) throws -> R {
        let endpoints = try TestCluster.require()
        return try FleetTestSupport.withTwoFreshHosts("shards", on: endpoints, label: "fleet-sh") { a, b, group in
            try body(a, b, group, try GroupState(group, of: a, endpoints: endpoints))
        }
    }

    /// The group's manifest in etcd.
    struct GroupState {
        let etcd: EtcdClient
        let root: [UInt8]
        let sealer: FleetManifestKey

        init(_ group: AccessGroup, of vault: Vault, endpoints: [String]) throws {
            etcd = EtcdClient(try EtcdClient.Configuration(endpoints: endpoints))
            root = try FleetTestSupport.etcdRoot(of: group, in: vault)
            let name = try GroupName(group.rawValue)
            let key = try ReplicatedGroupKey(
                exported: try vault.exportFleetGroupKey(group).unprotectedCopy(), group: name)
            sealer = try FleetManifestKey(key: key, group: name)
        }

        var manifestKey: [UInt8] { root + Array("manifest".utf8) }
        var shardsPrefix: [UInt8] { root + Array("shards/".utf8) }

        func shardKey(_ index: Int) -> [UInt8] {
            EtcdReplica.shardKeys(under: String(decoding: root, as: UTF8.self))[index]
        }

        /// The sealed root and the shards by index.
        func read() throws -> (root: EtcdKeyValue, shards: [Int: EtcdKeyValue]) {
            let root = try #require(try etcd.range(manifestKey).keyValues.first)
            var shards: [Int: EtcdKeyValue] = [:]
            for keyValue in try etcd.range(prefix: shardsPrefix).keyValues {
                let index = try #require(Int(String(decoding: keyValue.key.suffix(2), as: UTF8.self), radix: 16))
                shards[index] = keyValue
            }
            return (root, shards)
        }

        /// The manifest the root and shards make.
        func manifest() throws -> FleetManifest {
            let (root, shards) = try read()
            return try sealer.manifest(root.value, shards: shards.mapValues(\.value))
        }

        /// etcd's manifest written as earlier builds wrote it: the whole manifest in the one key (a step
        /// forward, counter + 1), and no shards; `overShards`, over the shards there, one of them stale
        /// (as an earlier build's resynchronisation of a group that this build wrote would leave them).
        func writeInOneKey(overShards: Bool = false) throws {
            var manifest = try manifest()
            manifest.counter += 1
            let sealed = try sealer.seal(
                manifest.encodedWhole(), associatedData: sealer.manifestAssociatedData, what: "the manifest")
            let shards: EtcdOperation =
                overShards
                ? .put(key: shardKey(5), value: FleetManifest.emptyShard(6))
                : .delete(key: shardsPrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: shardsPrefix))
            _ = try etcd.transaction(compare: [], success: [.put(key: manifestKey, value: sealed), shards])
        }
    }

    func key(_ service: String, _ group: AccessGroup) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    @Test func aWritePutsTheRootAndItsItemsShardAlone() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<150 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let before = try etcd.read()
            let manifest = try etcd.manifest()
            #expect(manifest.items.count == 150)
            guard case .root = try etcd.sealer.open(before.root.value) else {
                Issue.record("the manifest key holds no root")
                return
            }
            #expect(before.shards.count > 32, "150 items fill most of the 64 shards")
            try a.set(Data("new".utf8), for: try key("new", group))
            let id = try #require(try etcd.manifest().items.keys.first { manifest.items[$0] == nil })
            let after = try etcd.read()
            let changed = after.shards.filter { before.shards[$0.key]?.modRevision != $0.value.modRevision }
            #expect(Array(changed.keys) == [FleetManifest.shard(of: id)])
            #expect(after.root.modRevision == changed.first?.value.modRevision)
            // What the write carried of the manifest: the root and one shard, a fraction of the whole.
            let carried = after.root.value.count + (changed.first?.value.value.count ?? 0)
            #expect(carried * 5 < manifest.encodedWhole().count, "\(carried) bytes")
            #expect(try b.data(for: try key("new", group)) == Data("new".utf8))
            #expect(try b.data(for: try key("s7", group)) == Data("v7".utf8))
        }
    }

    @Test func aShardThatIsNotTheRootsIsRefusedAndAnOlderRootAloneIsARollback() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<20 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let old = try etcd.read()
            let manifest = try etcd.manifest()
            try a.set(Data("P2".utf8), for: try key("s3", group))
            #expect(try b.data(for: try key("s3", group)) == Data("P2".utf8))
            let current = try etcd.read()
            let changed = try #require(
                current.shards.first { old.shards[$0.key]?.value != $0.value.value }, "the shard of s3")
            let index = changed.key
            let put = { (operations: [EtcdOperation]) in _ = try etcd.etcd.transaction(compare: [], success: operations)
            }
            let restore =
                [current.root].map { EtcdOperation.put(key: $0.key, value: $0.value) }
                + current.shards.values.map { .put(key: $0.key, value: $0.value) }
            // A complete read refuses it (a process that verified the root before and sees it unchanged
            // serves what it verified: the shards add nothing to it).
            func refused(_ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
                for vault in [a, b] {
                    let error = #expect(throws: VaultError.self, sourceLocation: sourceLocation) {
                        _ = try vault.resyncFleetGroup(group, acceptingRollback: false)
                    }
                    #expect(error?.status == .decode, sourceLocation: sourceLocation)
                    #expect(
                        error?.message.contains(words) == true && error?.message.contains("--accept-rollback") == true,
                        "\(String(describing: error))", sourceLocation: sourceLocation)
                }
            }
            // The shard from before the write, under the root that lists the new one.
            try put([.put(key: changed.value.key, value: try #require(old.shards[index]).value)])
            refused("shard \(index) of its manifest")
            // Deleted.
            try put(restore)
            _ = try etcd.etcd.transaction(compare: [], success: [.delete(key: changed.value.key, rangeEnd: nil)])
            refused("shard \(index) of its manifest")
            // Another shard's bytes in its place.
            let other = try #require(current.shards.first { $0.key != index && $0.value.value.count > 9 })
            try put(restore)
            try put([.put(key: changed.value.key, value: other.value.value)])
            refused("shard \(index) of its manifest")
            // The root from before alone, over the newer shards: older than both machines have seen.
            try put(restore)
            try put([.put(key: etcd.manifestKey, value: old.root.value)])
            refused("older than this machine has seen")
            // Put back as it was, everything reads again.
            try put(restore)
            _ = try b.resyncFleetGroup(group, acceptingRollback: false)
            for vault in [a, b] { #expect(try vault.data(for: try key("s3", group)) == Data("P2".utf8)) }
            #expect(try etcd.manifest().items.count == manifest.items.count)
        }
    }

    @Test func aManifestInOneKeyIsReadAndTheNextWriteOrRotationPutsEveryShard() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<40 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            try etcd.writeInOneKey()
            guard case .whole = try etcd.sealer.open(try etcd.read().root.value) else {
                Issue.record("the manifest key holds no whole manifest")
                return
            }
            #expect(try etcd.read().shards.isEmpty)
            for vault in [a, b] { #expect(try vault.data(for: try key("s9", group)) == Data("v9".utf8)) }
            // The first write puts every shard, and a root.
            try b.set(Data("new".utf8), for: try key("new", group))
            let written = try etcd.read()
            guard case .root = try etcd.sealer.open(written.root.value) else {
                Issue.record("the write left no root")
                return
            }
            #expect(written.shards.count == FleetManifest.shardCount)
            #expect(try etcd.manifest().items.count == 41)
            for vault in [a, b] {
                #expect(try vault.data(for: try key("new", group)) == Data("new".utf8))
                #expect(try vault.data(for: try key("s39", group)) == Data("v39".utf8))
            }
            // A rotation over a manifest in one key puts its shards too.
            try etcd.writeInOneKey(overShards: true)
            for vault in [a, b] { #expect(try vault.data(for: try key("s8", group)) == Data("v8".utf8)) }
            _ = try a.rotateFleetGroup(group)
            // Sealed under the new generation, which the key file of before does not open.
            #expect((try? etcd.sealer.open(try etcd.read().root.value)) == nil)
            #expect(try etcd.read().shards[5]?.value != FleetManifest.emptyShard(6), "the stale shard put anew")
            for vault in [a, b] { #expect(try vault.data(for: try key("s5", group)) == Data("v5".utf8)) }
        }
    }

    /// A command on a machine whose cache is current takes the root alone: its write reads the root and
    /// its item's shard, and puts that shard (junk in another shard meanwhile is neither read nor
    /// touched); the other host reads every item after each.
    @Test func aCommandOnAWarmMachineWritesWithItsItemsShardAlone() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<30 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            // Each command's item id, from a write of a's (the manifest's one changed entry).
            func idOfWrite(_ write: () throws -> Void) throws -> ItemID {
                let before = try etcd.manifest()
                try write()
                let after = try etcd.manifest()
                return try #require(
                    Set(after.items.keys).symmetricDifference(before.items.keys).first
                        ?? after.items.first { before.items[$0.key] != $0.value }?.key)
            }
            let ids = [
                "new": try idOfWrite { try a.set(Data("first".utf8), for: try key("new", group)) },
                "s3": try idOfWrite { try a.set(Data("v3".utf8), for: try key("s3", group)) },
                "s4": try idOfWrite { try a.set(Data("v4".utf8), for: try key("s4", group)) },
            ]
            #expect(try a.remove(try key("new", group)))
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            func command(_ arguments: [String], input: String = "") throws -> FleetTestSupport.Outcome {
                try FleetTestSupport.run(
                    vault, ["--vault", b.path, "--group", group.rawValue] + arguments, input: input,
                    environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            }
            #expect(try command(["get", "s1", "app"]).output == "v1", "a complete refresh, recorded")
            let junk = Array("not a shard".utf8)
            for (arguments, input, service) in [
                (["put", "new", "app"], "added", "new"), (["put", "s3", "app"], "updated", "s3"),
                (["rm", "s4", "app"], "", "s4"),
            ] {
                let shard = FleetManifest.shard(of: try #require(ids[service]))
                let before = try etcd.read()
                let manifest = try etcd.manifest()
                let other = try #require(before.shards.first { $0.key != shard && $0.value.value.count > 9 })
                try etcd.etcd.put(other.value.key, junk)
                let outcome = try command(arguments, input: input)
                #expect(outcome.status == 0, "\(arguments): \(outcome)")
                let after = try etcd.read()
                #expect(after.shards[other.key]?.value == junk, "\(arguments): the other shard neither read nor put")
                try etcd.etcd.put(other.value.key, other.value.value)
                let changed = after.shards.filter {
                    $0.key != other.key && before.shards[$0.key]?.value != $0.value.value
                }
                #expect(Array(changed.keys) == [shard], "\(arguments)")
                guard case .root(let root) = try etcd.sealer.open(after.root.value) else {
                    Issue.record("no root after \(arguments)")
                    continue
                }
                let now = try etcd.manifest()
                #expect(root.itemCount == now.items.count && root.counter == manifest.counter + 1)
                #expect(try a.data(for: try key(service, group)) == (input.isEmpty ? nil : Data(input.utf8)))
            }
            #expect(try a.data(for: try key("s9", group)) == Data("v9".utf8))
            // Another host's write meanwhile: the command's check sees the root changed and reads the group.
            try a.set(Data("from a".utf8), for: try key("s5", group))
            #expect(try command(["put", "s6", "app"], input: "from b").status == 0)
            #expect(try command(["get", "s5", "app"]).output == "from a")
            #expect(try a.data(for: try key("s6", group)) == Data("from b".utf8))
            // A process that does not watch (as the C API opens the vault) writes three times in a row
            // from the root and each item's shard.
            #expect(try command(["get", "s1", "app"]).output == "v1")
            let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
            let handle = try Vault.open(at: b.path, client: client, fleet: .etcd(watching: false))
            let written = Set([try #require(ids["s3"]), try #require(ids["new"])].map(FleetManifest.shard(of:)))
            let other = try #require(
                try etcd.read().shards.first { !written.contains($0.key) && $0.value.value.count > 9 })
            try etcd.etcd.put(other.value.key, junk)
            try handle.set(Data("w1".utf8), for: try key("s3", group))
            try handle.set(Data("w2".utf8), for: try key("s3", group))
            try handle.set(Data("w3".utf8), for: try key("new", group))
            #expect(try etcd.read().shards[other.key]?.value == junk)
            try etcd.etcd.put(other.value.key, other.value.value)
            #expect(try a.data(for: try key("s3", group)) == Data("w2".utf8))
            #expect(try a.data(for: try key("new", group)) == Data("w3".utf8))
        }
    }

    /// Another machine's write between a write's check of the root and its read of the root with its
    /// shard (a proxy in front of etcd makes one in that window: the root put again) is a conflict, and
    /// the rerun reads the group afresh and writes.
    @Test func aWriteWhoseRootChangedAfterItsCheckIsRunAgainFromAFreshRead() throws {
        let endpoints = try TestCluster.require()
        let proxy = try InterposingProxy(upstream: endpoints[0])
        let group = try AccessGroup("conflict-\(UUID().uuidString.prefix(8).lowercased())")
        let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
        // b goes through the proxy.
        try FleetTestSupport.withTwoHosts(group, a: endpoints, b: [proxy.endpoint], label: "fleet-cf") { a, b in
            try a.set(Data("one".utf8), for: try key("s1", group))
            // A complete read by a process that does not watch, recorded for b's next processes.
            let recorded = try Vault.open(at: b.path, client: client, fleet: .etcd(watching: false))
            #expect(try recorded.data(for: try key("s1", group)) == Data("one".utf8))
            let etcd = try GroupState(group, of: a, endpoints: endpoints)
            let before = try etcd.manifest()
            // The next such process takes the cache by the root alone: its write reads the root and
            // the item's shard, and the proxy makes another machine's write just before that read.
            let handle = try Vault.open(at: b.path, client: client, fleet: .etcd(watching: false))
            try proxy.arm()
            try handle.set(Data("two".utf8), for: try key("s1", group))
            #expect(try proxy.puts() == 1, "the root was put again in the write's window")
            #expect(try a.data(for: try key("s1", group)) == Data("two".utf8))
            #expect(try etcd.manifest().counter == before.counter + 1, "one write, run again after its conflict")
            #expect(try handle.data(for: try key("s1", group)) == Data("two".utf8))
        }
    }

    /// A cached item file removed by hand: the next command finds the cache short of the root's count,
    /// reads the group and puts the file back (no rollback is claimed later).
    @Test func aCachedFileRemovedByHandIsPutBackByTheNextCommand() throws {
        try withTwoHosts { a, b, group, _ in
            for n in 0..<5 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let vault = FleetCommandTests.binaries.appendingPathComponent("vault").path
            func get(_ service: String) throws -> FleetTestSupport.Outcome {
                try FleetTestSupport.run(
                    vault, ["--vault", b.path, "--group", group.rawValue, "get", service, "app"],
                    environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"], seconds: 60)
            }
            #expect(try get("s0").output == "v0", "a complete refresh, recorded")
            let directory = b.path + "/groups/\(group.rawValue)"
            let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".item") }
            #expect(files.count == 5)
            for file in files { try FileManager.default.removeItem(atPath: directory + "/" + file) }
            for n in 0..<5 { #expect(try get("s\(n)").output == "v\(n)") }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".item") }.count
                    == 5)
            try a.set(Data("later".utf8), for: try key("s2", group))
            let later = try get("s2")
            #expect(later.status == 0 && later.output == "later", "\(later)")
        }
    }

    /// The manifest key of a group of the tests' own making, for the tests that need no etcd.
    func unitSealer() throws -> FleetManifestKey {
        let indexKey = try SymmetricKey.random()
        return try FleetManifestKey(
            group: try GroupName("limits"), groupID: Array(repeating: 7, count: 16), indexKey: indexKey,
            generation: 1, generationKey: indexKey)
    }

    /// An item id whose hash starts with `n`'s two low bytes, low byte first.
    func id(_ n: Int) throws -> ItemID {
        var hash = [UInt8](repeating: 0, count: ItemID.hashByteCount)
        hash[0] = UInt8(truncatingIfNeeded: n)
        hash[1] = UInt8(truncatingIfNeeded: n >> 8)
        return try ItemID(hashBytes: hash)
    }

    let digest = [UInt8](repeating: 1, count: FleetManifest.digestByteCount)

    @Test func aWriteOfOneShardCountsTheOthersAgainstTheLimit() throws {
        let sealer = try unitSealer()
        var full = FleetManifest(counter: 1, items: [:])
        for n in 0..<FleetManifest.maximumItemCount { full.items[try id(n)] = .init(digest: digest, version: 1) }
        let (sealed, shards) = try sealer.seal(&full, over: nil)
        guard case .root(let root) = try sealer.open(sealed) else {
            Issue.record("no root")
            return
        }
        #expect(root.itemCount == FleetManifest.maximumItemCount)
        let added = try id(FleetManifest.maximumItemCount)
        let partial = try sealer.manifest(root, shards: shards, loading: [FleetManifest.shard(of: added)])
        #expect(partial.items.count < 200 && partial.itemCount == FleetManifest.maximumItemCount)
        var next = partial
        next.items[added] = .init(digest: digest, version: 2)
        let refusal = #expect(throws: StoreError.self) { _ = try sealer.seal(&next, over: partial) }
        #expect(refusal?.message.contains("would hold \(FleetManifest.maximumItemCount + 1) items") == true)
        // An update within the shard goes through, and puts that shard alone.
        next = partial
        next.items[try #require(partial.items.keys.first)] = .init(digest: digest, version: 2)
        let (_, written) = try sealer.seal(&next, over: partial)
        #expect(Array(written.keys) == [FleetManifest.shard(of: added)])
    }

    @Test func aManifestOverTheItemLimitIsRefusedAndAShardHoldsItsOwnItemsOnly() throws {
        let sealer = try unitSealer()
        var items: [ItemID: FleetManifest.Entry] = [:]
        for n in 0..<(FleetManifest.maximumItemCount + 1) { items[try id(n)] = .init(digest: digest, version: 1) }
        var over = FleetManifest(counter: 1, items: items)
        let refusal = #expect(throws: StoreError.self) { _ = try sealer.seal(&over, over: nil) }
        #expect(refusal?.message.contains("at most \(FleetManifest.maximumItemCount)") == true)
        // Each id is in the shard of its first six bits; a shard listing another shard's item is refused.
        let last = try ItemID(hashBytes: [0xfc] + Array(repeating: 0, count: 31))
        #expect(FleetManifest.shard(of: last) == 63)
        let one = FleetManifest(counter: 1, items: [last: .init(digest: digest, version: 1)])
        let shard = try #require(one.shardEncodings([63])[63])
        var decoded: [ItemID: FleetManifest.Entry] = [:]
        #expect(FleetManifest.decodeShard(shard, index: 63, into: &decoded) && decoded[last] != nil)
        var moved = shard
        moved[FleetManifest.shardMagic.count] = 62
        decoded = [:]
        #expect(!FleetManifest.decodeShard(moved, index: 62, into: &decoded))
    }
}
