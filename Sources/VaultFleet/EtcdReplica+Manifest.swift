import VaultEtcd
import VaultStore

/// Where etcd holds a fleet group's manifest: its root under `manifest`, and its tree under
/// `tree/<epoch, 16 hex digits>/`: node `n` at `<n, 2 hex digits>`, leaf `l` at
/// `<its node>/<l's place in it, 2 hex digits>` (`FleetManifestTree`). A refresh reads the tree in one
/// range; a key there that is not a node or leaf of the root's epoch is never taken for one. An earlier
/// build's shards are under `shards/<index, two hex digits>`.
extension EtcdReplica {
    /// The prefix of the tree of epoch `epoch`.
    func treeKeyPrefix(epoch: UInt64) -> [UInt8] {
        var epochBytes: [UInt8] = []
        epochBytes.appendBigEndian(epoch)
        var prefix = treePrefix
        for byte in epochBytes { Hex.append(byte, to: &prefix) }
        return prefix + [UInt8(ascii: "/")]
    }

    func nodeKey(_ node: Int, epoch: UInt64) -> [UInt8] {
        var key = treeKeyPrefix(epoch: epoch)
        Hex.append(UInt8(node), to: &key)
        return key
    }

    func leafKey(_ leaf: Int, epoch: UInt64) -> [UInt8] {
        var key = nodeKey(FleetManifestTree.node(ofLeaf: leaf), epoch: epoch) + [UInt8(ascii: "/")]
        Hex.append(UInt8(leaf % FleetManifestTree.leavesPerNode), to: &key)
        return key
    }

    /// The most keys a tree has: every node and every leaf.
    static let treeKeyLimit = FleetManifestTree.nodeCount + FleetManifestTree.leafCount

    /// One read of every key under `tree/` at `revision`, of at most as many keys as a tree has: one
    /// operation beside the head's reads. Keys of another epoch (a tree whose writer died before its
    /// root) are in it and left out; when it holds more keys than that, the root's epoch is read alone
    /// (`readTree(epoch:at:)`).
    func treeRangeRead(revision: Int64) -> EtcdOperation {
        .range(
            key: treePrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: treePrefix), revision: revision,
            limit: Self.treeKeyLimit)
    }

    /// The nodes and leaves of epoch `epoch` among `keyValues`, by index.
    func tree(in keyValues: [EtcdKeyValue], epoch: UInt64) -> (nodes: [Int: [UInt8]], leaves: [Int: [UInt8]]) {
        let prefix = treeKeyPrefix(epoch: epoch)
        var nodes: [Int: [UInt8]] = [:]
        var leaves: [Int: [UInt8]] = [:]
        for keyValue in keyValues where keyValue.key.starts(with: prefix) {
            let rest = keyValue.key[(keyValue.key.startIndex + prefix.count)...]
            guard let node = Self.byte(ofHexDigits: rest.prefix(2)), node < FleetManifestTree.nodeCount else {
                continue
            }
            if rest.count == 2 {
                nodes[node] = keyValue.value
            } else if rest.count == 5, rest[rest.startIndex + 2] == UInt8(ascii: "/"),
                let place = Self.byte(ofHexDigits: rest.suffix(2)), place < FleetManifestTree.leavesPerNode
            {
                leaves[node * FleetManifestTree.leavesPerNode + place] = keyValue.value
            }
        }
        return (nodes, leaves)
    }

    /// The byte that two lowercase hex digits spell; nil when they are not two such digits.
    private static func byte(ofHexDigits digits: ArraySlice<UInt8>) -> Int? {
        guard digits.count == 2, let high = digits.first.flatMap(Hex.value(ofDigit:)),
            let low = digits.last.flatMap(Hex.value(ofDigit:))
        else { return nil }
        return Int(high << 4 | low)
    }

    /// The keys of the leaves that `nodes` (by index, as etcd holds them under `epoch`) list as not
    /// empty: what a read of them by name asks for, before the nodes are checked (the check of each
    /// follows).
    func keysOfLeaves(listedBy nodes: [Int: [UInt8]], epoch: UInt64) -> [[UInt8]] {
        var keys: [[UInt8]] = []
        for (node, bytes) in nodes {
            guard let digests = FleetManifestTree.decodeNode(bytes, index: node) else { continue }
            for leaf in FleetManifestTree.leaves(ofNode: node)
            where digests[FleetManifestTree.digestRange(ofLeaf: leaf)].contains(where: { $0 != 0 }) {
                keys.append(leafKey(leaf, epoch: epoch))
            }
        }
        return keys
    }

    /// The keys of the tree of epoch `epoch` as etcd held them at `revision`: one range of them; when
    /// that holds more keys than a tree has (strays put among them), or answers with more than the
    /// client takes, its nodes by name, then the leaves they list by name (bounded by the tree's own
    /// keys).
    func readTree(epoch: UInt64, at revision: Int64) throws(EtcdError) -> [EtcdKeyValue] {
        let prefix = treeKeyPrefix(epoch: epoch)
        do throws(EtcdError) {
            let found = try client.transaction(
                compare: [],
                success: [
                    .range(
                        key: prefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: prefix), revision: revision,
                        limit: Self.treeKeyLimit)
                ])
            guard let range = found.ranges.first, let range else {
                throw EtcdError(.malformedResponse, "etcd answered a read of the manifest's tree without its range")
            }
            if range.count <= Int64(Self.treeKeyLimit) { return range.keyValues }
        } catch  where error.code == .responseTooLarge {}
        let nodes = try readByName((0..<FleetManifestTree.nodeCount).map { nodeKey($0, epoch: epoch) }, at: revision)
        let leafKeys = keysOfLeaves(listedBy: tree(in: nodes, epoch: epoch).nodes, epoch: epoch)
        return try nodes + readByName(leafKeys, at: revision)
    }

    /// Keys `keys` read by name at `revision`, in transactions of at most `maximumOperations`.
    func readByName(_ keys: [[UInt8]], at revision: Int64) throws(EtcdError) -> [EtcdKeyValue] {
        var found: [EtcdKeyValue] = []
        var start = 0
        while start < keys.count {
            let chunk = keys[start..<min(start + Self.maximumOperations, keys.count)]
            start += chunk.count
            let answer = try client.transaction(
                compare: [], success: chunk.map { .range(key: $0, rangeEnd: nil, revision: revision) })
            guard answer.ranges.count == chunk.count else {
                throw EtcdError(.malformedResponse, "etcd answered a read of keys by name without every range")
            }
            found += Self.keyValues(named: chunk, in: answer.ranges)
        }
        return found
    }

    /// The values of `keys` in `ranges`, a transaction's answers to reads of those keys by name, in
    /// order: a key in a range that is not the one it read is left out.
    static func keyValues(named keys: some Sequence<[UInt8]>, in ranges: [EtcdRangeResult?]) -> [EtcdKeyValue] {
        zip(keys, ranges).flatMap { key, range in range?.keyValues.filter { $0.key == key } ?? [] }
    }

    /// The operations a transaction may hold (etcd's `--max-txn-ops` by default).
    static let maximumOperations = 128

    /// What a write puts of its manifest's tree with its root: the nodes and leaves it changed (an
    /// empty one deleted), and the deletion of every other epoch's keys; under a new epoch, the whole
    /// tree is put first here, in batches, and an earlier build's shards are deleted with the root.
    func treeOperations(_ write: FleetManifestTreeWrite) throws(StoreError) -> [EtcdOperation] {
        let keyed =
            write.nodes.map { (nodeKey($0.key, epoch: write.epoch), $0.value) }
            + write.leaves.map { (leafKey($0.key, epoch: write.epoch), $0.value) }
        let own = treeKeyPrefix(epoch: write.epoch)
        // Every other epoch's keys (a writer's that died before its root) go with each write.
        let others: [EtcdOperation] = [
            .delete(key: treePrefix, rangeEnd: own),
            .delete(key: EtcdClient.rangeEnd(ofPrefix: own), rangeEnd: EtcdClient.rangeEnd(ofPrefix: treePrefix)),
        ]
        guard write.isNewEpoch else {
            return others
                + keyed.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map { key, value in
                    value.map { .put(key: key, value: $0) } ?? .delete(key: key, rangeEnd: nil)
                }
        }
        var puts = keyed.compactMap { key, value in value.map { (key: key, value: $0) } }[...]
        while !puts.isEmpty {
            var batch: [EtcdOperation] = []
            var bytes = 0
            while let next = puts.first, batch.count < Self.maximumOperations,
                batch.isEmpty || bytes + next.value.count <= Self.maximumItemFileByteCount
            {
                batch.append(.put(key: next.key, value: next.value))
                bytes += next.value.count
                puts = puts.dropFirst()
            }
            do {
                _ = try client.transaction(compare: [], success: batch)
            } catch {
                // No root names the epoch yet.
                discardTree(epoch: write.epoch)
                throw storeError(error, "cannot write its manifest to etcd")
            }
        }
        return others + [.delete(key: shardsPrefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: shardsPrefix))]
    }

    /// Deletes the keys of a tree written under a new epoch whose root did not land, given the root etcd
    /// holds now (`current`, nil: none), which must name another epoch: a root of this write's that
    /// landed on an attempt whose answer was lost, and was written over since, names it, and its tree is
    /// the group's. Best effort: what is left is never read, and the next write deletes it.
    func discardTree(_ write: FleetManifestTreeWrite, current: [UInt8]?) {
        guard write.isNewEpoch else { return }
        if let current {
            guard case .root(let root) = try? sealer.open(current), root.epoch != write.epoch else { return }
        }
        discardTree(epoch: write.epoch)
    }

    private func discardTree(epoch: UInt64) {
        let prefix = treeKeyPrefix(epoch: epoch)
        _ = try? client.transaction(
            compare: [], success: [.delete(key: prefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: prefix))])
    }

    // MARK: An earlier build's shards

    /// The key of every shard of an earlier build's manifest, by index.
    static func shardKeys(under shardsPrefix: [UInt8]) -> [[UInt8]] {
        (0..<FleetShardedRoot.shardCount).map { index in
            var key = shardsPrefix
            Hex.append(UInt8(index), to: &key)
            return key
        }
    }

    /// The manifest that `opened` makes with its tree (or an earlier build's shards) among `keyValues`
    /// (`readGroup`), checked against it.
    func manifest(_ opened: OpenedManifest, in keyValues: [EtcdKeyValue]) throws(StoreError) -> FleetManifest {
        switch opened {
        case .whole(let whole):
            return whole
        case .sharded(let root):
            return try sealer.manifest(root, shards: shards(in: keyValues))
        case .root(let root):
            let tree = self.tree(in: keyValues, epoch: root.epoch)
            return try sealer.manifest(root, nodes: tree.nodes, leaves: tree.leaves)
        }
    }

    /// The shards among `keyValues`, by index.
    func shards(in keyValues: [EtcdKeyValue]) -> [Int: [UInt8]] {
        var shards: [Int: [UInt8]] = [:]
        for keyValue in keyValues {
            if let index = shardIndex[keyValue.key] { shards[index] = keyValue.value }
        }
        return shards
    }
}
