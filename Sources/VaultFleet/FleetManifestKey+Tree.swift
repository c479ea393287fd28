import VaultStore

/// A manifest sealed as a root over its tree, and a root's tree checked against it.
extension FleetManifestKey {
    /// `manifest` sealed as a root (a random nonce, then its bytes encrypted), with what etcd must be
    /// given of its tree beside it: the leaves that differ from `previous`'s and their nodes, or, when
    /// etcd holds no tree of `previous` (nil, or an earlier build's manifest), a whole tree under a new
    /// epoch. Sets the manifest's tree.
    func seal(_ manifest: inout FleetManifest, over previous: FleetManifest?) throws(StoreError)
        -> (root: [UInt8], tree: FleetManifestTreeWrite)
    {
        guard manifest.itemCount <= FleetManifest.maximumItemCount else {
            throw StoreError(
                .invalidName,
                "fleet group \(group) would hold \(manifest.itemCount) items; a fleet group holds at most "
                    + "\(FleetManifest.maximumItemCount); nothing was changed")
        }
        var tree: FleetManifestTree
        var write: FleetManifestTreeWrite
        var changedLeaves: Set<Int>
        if let previous, let previousTree = previous.tree {
            tree = previousTree
            write = FleetManifestTreeWrite(epoch: tree.epoch, isNewEpoch: false)
            changedLeaves = manifest.leaves(differingFrom: previous)
            if let loaded = manifest.loadedLeaves, !changedLeaves.isSubset(of: loaded) {
                throw StoreError(
                    .io,
                    "fleet group \(group): a write changed a leaf of its manifest that it did not read; nothing was "
                        + "changed")
            }
        } else if manifest.loadedLeaves != nil {
            throw StoreError(
                .io, "fleet group \(group): a write of part of its manifest over none; nothing was changed")
        } else {
            tree = FleetManifestTree(epoch: FleetManifestTree.newEpoch())
            write = FleetManifestTreeWrite(epoch: tree.epoch, isNewEpoch: true)
            changedLeaves = []
        }
        let ids = manifest.idsByLeaf(write.isNewEpoch ? nil : changedLeaves)
        if write.isNewEpoch { changedLeaves = Set(ids.keys) }
        var changedNodes = Set<Int>()
        for leaf in changedLeaves {
            let node = FleetManifestTree.node(ofLeaf: leaf)
            guard
                var digests = tree.nodes[node]
                    ?? (tree.nodeDigests[node] == FleetManifestTree.emptyDigest ? FleetManifestTree.emptyNode : nil)
            else {
                throw StoreError(
                    .io,
                    "fleet group \(group): a write changed a node of its manifest that it did not read; nothing was "
                        + "changed")
            }
            let bytes = manifest.leafEncoding(leaf, ids: ids[leaf] ?? [])
            let digest = try bytes.map { (bytes) throws(StoreError) in try leafDigest(of: bytes) }
            digests.replaceSubrange(
                FleetManifestTree.digestRange(ofLeaf: leaf), with: digest ?? FleetManifestTree.emptyDigest)
            tree.nodes[node] = digests
            write.leaves.updateValue(bytes, forKey: leaf)
            changedNodes.insert(node)
        }
        for node in changedNodes {
            let digests = tree.nodes[node] ?? FleetManifestTree.emptyNode
            let bytes = FleetManifestTree.nodeEncoding(node, leafDigests: digests)
            tree.nodeDigests[node] =
                try bytes.map { (bytes) throws(StoreError) in try nodeDigest(of: bytes) }
                ?? FleetManifestTree.emptyDigest
            if bytes == nil { tree.nodes.removeValue(forKey: node) }
            write.nodes.updateValue(bytes, forKey: node)
        }
        manifest.tree = tree
        return (
            try seal(FleetManifestRoot(counter: manifest.counter, itemCount: manifest.itemCount, tree: tree)), write
        )
    }

    /// The manifest of `root` with the `nodes` and `leaves` of its tree (by index, as etcd holds them
    /// under its epoch); `integrity` naming the first node or leaf that is not the one the root lists.
    /// With `loading`, those leaves alone (the items of the others counted, not listed). With `known`
    /// (a manifest checked before), a node or leaf of the same epoch with the same digest is taken
    /// from it and need not be given.
    func manifest(
        _ root: FleetManifestRoot, nodes: [Int: [UInt8]], leaves: [Int: [UInt8]], loading: Set<Int>? = nil,
        known: FleetManifest? = nil
    ) throws(StoreError) -> FleetManifest {
        var tree = FleetManifestTree(epoch: root.epoch, nodeDigests: root.nodeDigests)
        let knownTree = known?.tree?.epoch == root.epoch ? known?.tree : nil
        let nodeIndices =
            loading.map { Set($0.map(FleetManifestTree.node(ofLeaf:))) } ?? Set(0..<tree.nodeDigests.count)
        for node in nodeIndices.sorted() where tree.nodeDigests[node] != FleetManifestTree.emptyDigest {
            if let knownTree, knownTree.nodeDigests[node] == tree.nodeDigests[node], let digests = knownTree.nodes[node]
            {
                tree.nodes[node] = digests
                continue
            }
            guard let digests = try leafDigests(ofNode: node, bytes: nodes[node], listed: tree.nodeDigests[node]) else {
                throw notListed("node \(node)", by: "the manifest's root")
            }
            tree.nodes[node] = digests
        }
        var items: [ItemID: FleetManifest.Entry] = [:]
        items.reserveCapacity(loading == nil ? root.itemCount : 0)
        let knownIDs = knownTree == nil ? [:] : known?.idsByLeaf(loading) ?? [:]
        // The leaves of the nodes that are not empty, their digests looked at in place (most are empty).
        let leafIndices =
            loading?.sorted()
            ?? tree.nodes.keys.sorted().flatMap { FleetManifestTree.leaves(ofNode: $0) }
        for leaf in leafIndices {
            guard let digest = tree.leafDigestBytes(leaf), digest.contains(where: { $0 != 0 }) else { continue }
            if let knownTree, let known, knownTree.leafDigestBytes(leaf)?.elementsEqual(digest) == true {
                for id in knownIDs[leaf] ?? [] { items[id] = known.items[id] }
                continue
            }
            guard let bytes = leaves[leaf], try leafDigest(of: bytes).elementsEqual(digest),
                FleetManifest.decodeLeaf(bytes, index: leaf, into: &items), items.count <= root.itemCount
            else {
                throw notListed("leaf \(leaf)", by: "its node")
            }
        }
        guard loading != nil || items.count == root.itemCount else {
            throw miscounted(items.count, in: "leaves", where: root.itemCount)
        }
        var manifest = FleetManifest(counter: root.counter, items: items, tree: tree)
        manifest.loadedLeaves = loading
        manifest.unloadedItemCount = root.itemCount - items.count
        return manifest
    }

    /// Node `node`'s leaf digests when `bytes` (as etcd holds them; nil: absent) are the node whose digest
    /// its root lists (`listed`; the empty digest: every leaf empty); nil when they are not (a node
    /// replaced, or put back from before, would hide its leaves' changes).
    func leafDigests(ofNode node: Int, bytes: [UInt8]?, listed: [UInt8]) throws(StoreError) -> [UInt8]? {
        guard listed != FleetManifestTree.emptyDigest else { return FleetManifestTree.emptyNode }
        guard let bytes, try nodeDigest(of: bytes) == listed else { return nil }
        return FleetManifestTree.decodeNode(bytes, index: node)
    }

    /// The manifest of an earlier build's root over `shards` (by index; an absent shard is empty);
    /// `integrity` naming the first shard that is not the one the root lists. It has no tree: the next
    /// write puts one.
    func manifest(_ root: FleetShardedRoot, shards: [Int: [UInt8]]) throws(StoreError) -> FleetManifest {
        var items: [ItemID: FleetManifest.Entry] = [:]
        for index in 0..<FleetShardedRoot.shardCount {
            let bytes = shards[index] ?? FleetShardedRoot.emptyShard(index)
            guard try shardDigest(of: bytes) == root.shardDigests[index],
                FleetShardedRoot.decodeShard(bytes, index: index, into: &items), items.count <= root.itemCount
            else {
                throw notListed("shard \(index)", by: "the manifest's root")
            }
        }
        guard items.count == root.itemCount else { throw miscounted(items.count, in: "shards", where: root.itemCount) }
        return FleetManifest(counter: root.counter, items: items)
    }

    /// The refusal of `part` of the manifest in etcd that is not the one `lister` lists.
    private func notListed(_ part: String, by lister: String) -> StoreError {
        StoreError(
            .integrity,
            "fleet group \(group): \(part) of its manifest in etcd is not the one \(lister) lists (replaced, "
                + "deleted, or an older one)" + Self.resyncHint(group))
    }

    /// The refusal of a manifest whose `parts` list `count` items where its root says `rootCount`.
    private func miscounted(_ count: Int, in parts: String, where rootCount: Int) -> StoreError {
        StoreError(
            .integrity,
            "fleet group \(group): its manifest's \(parts) in etcd list \(count) items where its root says "
                + "\(rootCount)" + Self.resyncHint(group))
    }
}
