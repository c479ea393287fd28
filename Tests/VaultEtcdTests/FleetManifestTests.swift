import Foundation
import Testing
import Vault
import VaultCrypto
import VaultEtcd
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import VaultFleet

/// A fleet group's manifest in etcd as a sealed root over a tree: a write puts its item's leaf and node
/// alone, whatever the group's size; a node or leaf that is not the root's is refused; and a manifest
/// as earlier builds wrote it (in one key, or over shards) is read and put as a tree by the next write.
@Suite(.serialized) struct FleetManifestTests {
    /// Two hosts of a new fleet group reading fresh, with the group's manifest key and its keys in etcd.
    func withTwoHosts<R>(
        _ body: (_ a: Vault, _ b: Vault, _ group: AccessGroup, _ etcd: GroupState) throws -> R
    ) throws -> R {
        let endpoints = try TestCluster.require()
        return try FleetTestSupport.withTwoFreshHosts("tree", on: endpoints, label: "fleet-tr") { a, b, group in
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
        var treePrefix: [UInt8] { root + Array("tree/".utf8) }
        var shardsPrefix: [UInt8] { root + Array("shards/".utf8) }

        func epochPrefix(_ epoch: UInt64) -> [UInt8] { treePrefix + Array(String(format: "%016llx/", epoch).utf8) }

        /// The keys of leaf `leaf` and of its node under `epoch`.
        func keys(ofLeaf leaf: Int, epoch: UInt64) -> (node: [UInt8], leaf: [UInt8]) {
            let node = epochPrefix(epoch) + Array(String(format: "%02x", leaf / 64).utf8)
            return (node, node + Array(String(format: "/%02x", leaf % 64).utf8))
        }

        /// The sealed root and every key under `tree/`, by key.
        func read() throws -> (root: EtcdKeyValue, tree: [[UInt8]: EtcdKeyValue]) {
            let root = try #require(try etcd.range(manifestKey).keyValues.first)
            let tree = try etcd.range(prefix: treePrefix).keyValues
            return (root, Dictionary(uniqueKeysWithValues: tree.map { ($0.key, $0) }))
        }

        /// The root etcd holds.
        func treeRoot() throws -> FleetManifestRoot {
            guard case .root(let root) = try sealer.open(try read().root.value) else {
                throw StoreError(.integrity, "the manifest key holds no root")
            }
            return root
        }

        /// The manifest the root and its tree make (or an earlier build's manifest).
        func manifest() throws -> FleetManifest {
            let (rootValue, tree) = try read()
            switch try sealer.open(rootValue.value) {
            case .whole(let whole):
                return whole
            case .sharded(let root):
                var shards: [Int: [UInt8]] = [:]
                for keyValue in try etcd.range(prefix: shardsPrefix).keyValues {
                    shards[try #require(Int(String(decoding: keyValue.key.suffix(2), as: UTF8.self), radix: 16))] =
                        keyValue.value
                }
                return try sealer.manifest(root, shards: shards)
            case .root(let root):
                let prefix = epochPrefix(root.epoch)
                var nodes: [Int: [UInt8]] = [:]
                var leaves: [Int: [UInt8]] = [:]
                for (key, keyValue) in tree where key.starts(with: prefix) {
                    let path = String(decoding: key.dropFirst(prefix.count), as: UTF8.self).split(separator: "/")
                    let node = try #require(Int(path[0], radix: 16))
                    if path.count == 1 {
                        nodes[node] = keyValue.value
                    } else {
                        leaves[node * 64 + (try #require(Int(path[1], radix: 16)))] = keyValue.value
                    }
                }
                return try sealer.manifest(root, nodes: nodes, leaves: leaves)
            }
        }

        /// etcd's manifest written as the earliest builds wrote it: the whole manifest in the one key (a
        /// step forward, counter + 1), and no tree.
        func writeInOneKey() throws {
            var manifest = try manifest()
            manifest.counter += 1
            _ = try etcd.transaction(
                compare: [],
                success: [
                    .put(key: manifestKey, value: try sealer.sealManifest(manifest.encodedWhole())),
                    .delete(key: treePrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: treePrefix)),
                ])
        }

        /// etcd's manifest written as the builds before the tree wrote it: a root over 64 shards, each
        /// item in the shard of its id's first six bits (a step forward, counter + 1), and no tree.
        func writeOverShards() throws {
            var manifest = try manifest()
            manifest.counter += 1
            var digests: [[UInt8]] = []
            var operations: [EtcdOperation] = [
                .delete(key: treePrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: treePrefix))
            ]
            for index in 0..<FleetShardedRoot.shardCount {
                let ids = manifest.items.keys.filter { FleetShardedRoot.shard(of: $0) == index }
                var bytes = FleetShardedRoot.shardMagic + [UInt8(index)]
                bytes.appendBigEndian(UInt32(ids.count))
                manifest.appendEntries(of: ids, to: &bytes)
                digests.append(try sealer.shardDigest(of: bytes))
                if !ids.isEmpty {
                    operations.append(
                        .put(key: shardsPrefix + Array(String(format: "%02x", index).utf8), value: bytes))
                }
            }
            let root = FleetShardedRoot(
                counter: manifest.counter, itemCount: manifest.items.count, shardDigests: digests)
            operations.append(.put(key: manifestKey, value: try sealer.sealManifest(root.encoded())))
            _ = try etcd.transaction(compare: [], success: operations)
        }
    }

    func key(_ service: String, _ group: AccessGroup) throws -> ItemKey {
        try ItemKey(service: service, account: "app", group: group)
    }

    /// The keys whose values differ between `before` and `after` (put, changed or deleted).
    func changedKeys(_ before: [[UInt8]: EtcdKeyValue], _ after: [[UInt8]: EtcdKeyValue]) -> Set<[UInt8]> {
        Set(before.keys).union(after.keys).filter { before[$0]?.value != after[$0]?.value }
    }

    @Test func aWritePutsTheRootItsItemsLeafAndNodeAloneWhateverTheGroupsSize() throws {
        try withTwoHosts { a, b, group, etcd in
            // What a write carries of the manifest in a group of `count` items: the root, one node and one
            // leaf, the only keys of the tree it changes.
            func carried(at count: Int) throws -> Int {
                let service = "new\(count)"
                let before = try etcd.read()
                let manifest = try etcd.manifest()
                try a.set(Data("new".utf8), for: try key(service, group))
                let after = try etcd.read()
                let id = try #require(try etcd.manifest().items.keys.first { manifest.items[$0] == nil })
                let root = try etcd.treeRoot()
                let (node, leaf) = etcd.keys(ofLeaf: FleetManifest.leaf(of: id), epoch: root.epoch)
                #expect(changedKeys(before.tree, after.tree) == [node, leaf])
                #expect(after.root.modRevision == after.tree[leaf]?.modRevision)
                #expect(try b.data(for: try key(service, group)) == Data("new".utf8))
                return after.root.value.count + (after.tree[node]?.value.count ?? 0)
                    + (after.tree[leaf]?.value.count ?? 0)
            }
            for n in 0..<20 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let small = try carried(at: 20)
            for n in 20..<600 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let large = try carried(at: 600)
            // The leaf of 600 items' ids holds a few more entries at most; the whole manifest is 30 times
            // larger.
            #expect(large - small <= 3 * FleetManifest.entryByteCount, "\(small) and \(large) bytes")
            let whole = try etcd.manifest().encodedWhole().count
            #expect(large * 10 < whole, "\(large) of \(whole) bytes")
            #expect(try b.data(for: try key("s7", group)) == Data("v7".utf8))
        }
    }

    @Test func aNodeOrLeafThatIsNotTheRootsIsRefusedAndAnOlderRootAloneIsARollback() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<20 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            let old = try etcd.read()
            let manifest = try etcd.manifest()
            try a.set(Data("P2".utf8), for: try key("s3", group))
            #expect(try b.data(for: try key("s3", group)) == Data("P2".utf8))
            let current = try etcd.read()
            let id = try #require(try etcd.manifest().items.first { manifest.items[$0.key] != $0.value }?.key)
            let leafIndex = FleetManifest.leaf(of: id)
            let (node, leaf) = etcd.keys(ofLeaf: leafIndex, epoch: try etcd.treeRoot().epoch)
            #expect(changedKeys(old.tree, current.tree) == [node, leaf])
            let put = { (operations: [EtcdOperation]) in _ = try etcd.etcd.transaction(compare: [], success: operations)
            }
            let restore =
                [current.root].map { EtcdOperation.put(key: $0.key, value: $0.value) }
                + current.tree.values.map { .put(key: $0.key, value: $0.value) }
            // A complete read refuses it (a process that verified the root before and sees it unchanged
            // serves what it verified: the tree adds nothing to it).
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
            // The leaf from before the write, under the node that lists the new one.
            try put([.put(key: leaf, value: try #require(old.tree[leaf]).value)])
            refused("leaf \(leafIndex) of its manifest")
            // The node from before, under the root that lists the new one.
            try put(restore)
            try put([.put(key: node, value: try #require(old.tree[node]).value)])
            refused("node \(leafIndex / 64) of its manifest")
            // Deleted.
            try put(restore)
            _ = try etcd.etcd.transaction(compare: [], success: [.delete(key: leaf, rangeEnd: nil)])
            refused("leaf \(leafIndex) of its manifest")
            // Another leaf's bytes in its place.
            let other = try #require(current.tree.first { $0.key != leaf && $0.key.count == leaf.count })
            try put(restore)
            try put([.put(key: leaf, value: other.value.value)])
            refused("leaf \(leafIndex) of its manifest")
            // The root from before alone, over the newer tree: older than both machines have seen.
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

    @Test func anEarlierBuildsManifestIsReadAndTheNextWritePutsATreeUnderANewEpoch() throws {
        try withTwoHosts { a, b, group, etcd in
            for n in 0..<200 { try a.set(Data("v\(n)".utf8), for: try key("s\(n)", group)) }
            var epoch = try etcd.treeRoot().epoch
            for (format, write) in [("in one key", etcd.writeInOneKey), ("over shards", etcd.writeOverShards)] {
                try write()
                if case .root = try etcd.sealer.open(try etcd.read().root.value) {
                    Issue.record("\(format): the manifest key holds a root")
                }
                #expect(try etcd.read().tree.isEmpty, "\(format)")
                for vault in [a, b] { #expect(try vault.data(for: try key("s9", group)) == Data("v9".utf8)) }
                // What a writer that died while putting a whole tree left.
                let left = etcd.keys(ofLeaf: 7, epoch: 0xdead).leaf
                try etcd.etcd.put(left, Array("left".utf8))
                // The first write puts a whole tree (more keys than one transaction takes) under a new epoch,
                // and a root; the shards, and every other epoch's keys, are deleted with it.
                try b.set(Data(format.utf8), for: try key("new", group))
                let root = try etcd.treeRoot()
                #expect(root.epoch != epoch, "\(format)")
                epoch = root.epoch
                let tree = try etcd.read().tree
                #expect(tree.count > EtcdReplica.maximumOperations, "\(format)")
                #expect(tree.keys.allSatisfy { $0.starts(with: etcd.epochPrefix(epoch)) }, "\(format)")
                #expect(try etcd.etcd.range(prefix: etcd.shardsPrefix).keyValues.isEmpty, "\(format)")
                #expect(try etcd.manifest().items.count == 201)
                for vault in [a, b] {
                    #expect(try vault.data(for: try key("new", group)) == Data(format.utf8))
                    #expect(try vault.data(for: try key("s199", group)) == Data("v199".utf8))
                }
            }
            // A write in place deletes another epoch's keys too.
            let left = etcd.keys(ofLeaf: 9, epoch: 0xdead).node
            try etcd.etcd.put(left, Array("left".utf8))
            try a.set(Data("in place".utf8), for: try key("s1", group))
            #expect(try etcd.treeRoot().epoch == epoch)
            #expect(try etcd.etcd.range(left).keyValues.isEmpty)
            // A rotation over a manifest in one key seals it again under the new key, and its first batch of
            // items sealed again (a write of the group) puts a tree.
            try etcd.writeInOneKey()
            for vault in [a, b] { #expect(try vault.data(for: try key("s8", group)) == Data("v8".utf8)) }
            _ = try a.rotateFleetGroup(group)
            // Sealed under the new generation, which the key file of before does not open.
            #expect((try? etcd.sealer.open(try etcd.read().root.value)) == nil)
            let rotated = try GroupState(group, of: a, endpoints: try TestCluster.require())
            #expect(try rotated.treeRoot().epoch != epoch)
            #expect(try rotated.manifest().items.count == 201)
            for vault in [a, b] { #expect(try vault.data(for: try key("s5", group)) == Data("v5".utf8)) }
        }
    }

    /// A command on a machine whose cache is current takes the root alone: its write reads the root, and
    /// its item's node and leaf, and puts them (junk in another leaf meanwhile is neither read nor
    /// touched); the other host reads every item after each.
    @Test func aCommandOnAWarmMachineWritesWithItsItemsLeafAlone() throws {
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
            let junk = Array("not a leaf".utf8)
            /// A leaf key of the tree other than those of `leaves`.
            func otherLeaf(than leaves: [Int]) throws -> EtcdKeyValue {
                let epoch = try etcd.treeRoot().epoch
                let own = Set(leaves.map { etcd.keys(ofLeaf: $0, epoch: epoch).leaf })
                let leafLength = etcd.keys(ofLeaf: 0, epoch: epoch).leaf.count
                return try #require(
                    try etcd.read().tree.values.first { $0.key.count == leafLength && !own.contains($0.key) })
            }
            for (arguments, input, service) in [
                (["put", "new", "app"], "added", "new"), (["put", "s3", "app"], "updated", "s3"),
                (["rm", "s4", "app"], "", "s4"),
            ] {
                let leaf = FleetManifest.leaf(of: try #require(ids[service]))
                let before = try etcd.read()
                let manifest = try etcd.manifest()
                let other = try otherLeaf(than: [leaf])
                try etcd.etcd.put(other.key, junk)
                let outcome = try command(arguments, input: input)
                #expect(outcome.status == 0, "\(arguments): \(outcome)")
                let after = try etcd.read()
                #expect(after.tree[other.key]?.value == junk, "\(arguments): the other leaf neither read nor put")
                try etcd.etcd.put(other.key, other.value)
                let keys = etcd.keys(ofLeaf: leaf, epoch: try etcd.treeRoot().epoch)
                let changed = changedKeys(before.tree, after.tree).subtracting([other.key])
                #expect(changed.contains(keys.leaf) && changed.isSubset(of: [keys.node, keys.leaf]), "\(arguments)")
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
            // from the root and each item's leaf.
            #expect(try command(["get", "s1", "app"]).output == "v1")
            let client = try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue])
            let handle = try Vault.open(at: b.path, client: client, fleet: .etcd(watching: false))
            let other = try otherLeaf(
                than: [try #require(ids["s3"]), try #require(ids["new"])].map(FleetManifest.leaf(of:)))
            try etcd.etcd.put(other.key, junk)
            try handle.set(Data("w1".utf8), for: try key("s3", group))
            try handle.set(Data("w2".utf8), for: try key("s3", group))
            try handle.set(Data("w3".utf8), for: try key("new", group))
            #expect(try etcd.read().tree[other.key]?.value == junk)
            try etcd.etcd.put(other.key, other.value)
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

    @Test func aWriteOfOneLeafCountsTheOthersAgainstTheLimit() throws {
        let sealer = try unitSealer()
        var full = FleetManifest(counter: 1, items: [:])
        for n in 0..<FleetManifest.maximumItemCount { full.items[try id(n)] = .init(digest: digest, version: 1) }
        let (sealed, tree) = try sealer.seal(&full, over: nil)
        #expect(tree.isNewEpoch && tree.nodes.values.allSatisfy { $0 != nil })
        guard case .root(let root) = try sealer.open(sealed) else {
            Issue.record("no root")
            return
        }
        #expect(root.itemCount == FleetManifest.maximumItemCount && root.epoch == tree.epoch)
        let nodes = tree.nodes.compactMapValues { $0 }
        let leaves = tree.leaves.compactMapValues { $0 }
        #expect(try sealer.manifest(root, nodes: nodes, leaves: leaves).items.count == FleetManifest.maximumItemCount)
        let added = try id(FleetManifest.maximumItemCount)
        let leaf = FleetManifest.leaf(of: added)
        let partial = try sealer.manifest(root, nodes: nodes, leaves: leaves, loading: [leaf])
        #expect(partial.items.count < 200 && partial.itemCount == FleetManifest.maximumItemCount)
        var next = partial
        next.items[added] = .init(digest: digest, version: 2)
        let refusal = #expect(throws: StoreError.self) { _ = try sealer.seal(&next, over: partial) }
        #expect(refusal?.message.contains("would hold \(FleetManifest.maximumItemCount + 1) items") == true)
        // An update within the leaf goes through in place, and puts that leaf and its node alone.
        next = partial
        let updated = try #require(partial.items.keys.first)
        next.items[updated] = .init(digest: digest, version: 2)
        let (_, written) = try sealer.seal(&next, over: partial)
        #expect(!written.isNewEpoch && written.epoch == tree.epoch)
        #expect(Array(written.leaves.keys) == [leaf] && Array(written.nodes.keys) == [leaf / 64])
        // A change to another leaf, not read, is refused.
        next = partial
        next.items[updated] = nil
        next.items[try id(FleetManifest.maximumItemCount + 1)] = .init(digest: digest, version: 2)
        #expect(FleetManifest.leaf(of: try id(FleetManifest.maximumItemCount + 1)) != leaf)
        let unread = #expect(throws: StoreError.self) { _ = try sealer.seal(&next, over: partial) }
        #expect(unread?.message.contains("that it did not read") == true)
    }

    @Test func anEmptiedLeafAndNodeAreDeletedAndListedAsEmpty() throws {
        let sealer = try unitSealer()
        let only = try id(0x123)
        var one = FleetManifest(counter: 1, items: [only: .init(digest: digest, version: 1)])
        let (_, first) = try sealer.seal(&one, over: nil)
        let leaf = FleetManifest.leaf(of: only)
        #expect(first.leaves.count == 1 && first.nodes.count == 1)
        var none = one
        none.counter = 2
        none.items = [:]
        let (sealed, emptied) = try sealer.seal(&none, over: one)
        #expect(emptied.leaves.count == 1 && emptied.leaves[leaf] == .some(nil), "the leaf deleted")
        #expect(emptied.nodes.count == 1 && emptied.nodes[leaf / 64] == .some(nil), "its node deleted")
        guard case .root(let root) = try sealer.open(sealed) else {
            Issue.record("no root")
            return
        }
        #expect(root.nodeDigests.allSatisfy { $0 == FleetManifestTree.emptyDigest })
        #expect(try sealer.manifest(root, nodes: [:], leaves: [:]).items.isEmpty)
    }

    @Test func aManifestOverTheItemLimitIsRefusedAndALeafOrNodeHoldsItsOwnOnly() throws {
        let sealer = try unitSealer()
        var items: [ItemID: FleetManifest.Entry] = [:]
        for n in 0..<(FleetManifest.maximumItemCount + 1) { items[try id(n)] = .init(digest: digest, version: 1) }
        var over = FleetManifest(counter: 1, items: items)
        let refusal = #expect(throws: StoreError.self) { _ = try sealer.seal(&over, over: nil) }
        #expect(refusal?.message.contains("at most \(FleetManifest.maximumItemCount)") == true)
        // Each id is in the leaf of its first 12 bits; a leaf listing another leaf's item is refused.
        let last = try ItemID(hashBytes: [0xfc, 0x10] + Array(repeating: 0, count: 30))
        #expect(FleetManifest.leaf(of: last) == 0xfc1)
        let one = FleetManifest(counter: 1, items: [last: .init(digest: digest, version: 1)])
        let leaf = try #require(one.leafEncoding(0xfc1, ids: [last]))
        var decoded: [ItemID: FleetManifest.Entry] = [:]
        #expect(FleetManifest.decodeLeaf(leaf, index: 0xfc1, into: &decoded) && decoded[last] != nil)
        var moved = leaf
        moved[FleetManifest.leafMagic.count + 1] = 0xc2
        decoded = [:]
        #expect(!FleetManifest.decodeLeaf(moved, index: 0xfc2, into: &decoded))
        #expect(one.leafEncoding(0xfc1, ids: []) == nil, "an empty leaf is not stored")
        // A node is its own index's alone.
        var digests = FleetManifestTree.emptyNode
        digests[0] = 1
        let node = try #require(FleetManifestTree.nodeEncoding(0x3f, leafDigests: digests))
        #expect(FleetManifestTree.decodeNode(node, index: 0x3f) == digests)
        #expect(FleetManifestTree.decodeNode(node, index: 0x3e) == nil)
        #expect(FleetManifestTree.nodeEncoding(0x3f, leafDigests: FleetManifestTree.emptyNode) == nil)
    }
}
