import VaultEtcd
import VaultStore

/// The second half of a rotation: every item and kept version in etcd sealed again under the group's
/// current generation, in batches. An item's batch is a write of the group (compared on the items and
/// the manifest, with the next manifest); an item's version never changes, so a version's is compared
/// on its own revision alone.
extension EtcdReplica {
    /// Items or versions per batch, within etcd's limits on a transaction's operations and size.
    static let resealBatchCount = 32

    /// Seals every item and kept version under the group's current generation (the cache current, under
    /// the group's lock); how many of each it sealed again, and how many items it left under the
    /// generation before (other machines kept writing: the next rotation finishes them first).
    func resealEverything(_ cache: ReplicaCache) throws(StoreError) -> (items: Int, versions: Int, itemsLeft: Int) {
        let items = try resealItems(cache)
        return (items.done, try resealVersions(cache), items.left)
    }

    /// Seals the cached items again in batches. A batch whose compare failed (another machine wrote)
    /// is tried again at once without the items written meanwhile, which are looked at again later
    /// (`resealAttempts` tries a batch).
    private func resealItems(_ cache: ReplicaCache) throws(StoreError) -> (done: Int, left: Int) {
        var count = 0
        var pending = try cache.cachedIDs().sorted()[...]
        var failures = 0
        while !pending.isEmpty {
            var batch: [(id: ItemID, original: [UInt8], contents: [UInt8])] = []
            var bytes = 0
            var taken = 0
            for id in pending {
                // Gone since, or written since under the new key: nothing to do.
                guard let original = try cache.contents(of: id), let resealed = try cache.resealed(original, as: id)
                else {
                    taken += 1
                    continue
                }
                if !batch.isEmpty,
                    batch.count == Self.resealBatchCount || bytes + resealed.count > Self.maximumItemFileByteCount
                {
                    break
                }
                batch.append((id, original, resealed))
                bytes += resealed.count
                taken += 1
            }
            pending = pending.dropFirst(taken)
            let generation = sealer.generation
            while !batch.isEmpty {
                if try commitReseal(batch.map { ($0.id, $0.contents) }, cache) {
                    count += batch.count
                    failures = 0
                    break
                }
                failures += 1
                guard failures < Self.resealAttempts else { return (count, batch.count + pending.count) }
                var kept: [(id: ItemID, original: [UInt8], contents: [UInt8])] = []
                if sealer.generation != generation {
                    // Another machine rotated meanwhile (this one took it): sealed again under the newest.
                    pending.append(contentsOf: batch.map(\.id))
                    break
                }
                for item in batch {
                    if try cache.contents(of: item.id) == item.original {
                        kept.append(item)
                    } else {
                        pending.append(item.id)
                    }
                }
                batch = kept
            }
        }
        return (count, 0)
    }

    /// Puts `batch`'s item files with the next manifest, compared on what this process saw (a new file,
    /// written at the next counter as far as a machine's mark is concerned). False when the compare
    /// failed: the cache is then brought to etcd's manifest (`stepForward`, or a complete refresh).
    private func commitReseal(_ batch: [(id: ItemID, contents: [UInt8])], _ cache: ReplicaCache) throws(StoreError)
        -> Bool
    {
        let (last, manifestRevision, rollbackRevision, revisions) = seen.withLock {
            ($0.manifest, $0.manifestRevision, $0.rollbackRevision, $0.revisions)
        }
        guard var next = last else {
            try refresh(cache)
            return false
        }
        next.counter += 1
        var compare: [EtcdCompare] = [
            .modRevision(key: manifestKey, equals: manifestRevision),
            .modRevision(key: rollbackKey, equals: rollbackRevision),
        ]
        var puts: [EtcdOperation] = []
        let keys = batch.map { itemKey($0.id) }
        for (key, item) in zip(keys, batch) {
            guard let revision = revisions[key], next.items[item.id] != nil else {
                try refresh(cache)
                return false
            }
            compare.append(.modRevision(key: key, equals: revision))
            puts.append(.put(key: key, value: item.contents))
            next.items[item.id] = FleetManifest.Entry(
                digest: try sealer.digest(of: item.contents), version: next.counter)
        }
        let (sealed, tree) = try sealer.seal(&next, over: last)
        let treeWrites = try treeOperations(tree)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: compare, success: puts + [.put(key: manifestKey, value: sealed)] + treeWrites,
                failure: headKeys.map { .range(key: $0, rangeEnd: nil) })
        } catch {
            forget()
            throw storeError(error, "cannot seal its items again under the new key")
        }
        guard result.succeeded else {
            let current = Self.keyValues(named: headKeys, in: result.ranges).first { $0.key == manifestKey }
            discardTree(tree, current: current?.value)
            // Another machine's write: a step to it from the head the answer holds, when it is one; else a
            // complete refresh (which refuses what must be refused, and says that a rollback was accepted).
            // Under the same root, an item of the batch changed behind the manifest's back: a complete
            // refresh reads its revision (or refuses it).
            let rootMoved = current.map { $0.modRevision != manifestRevision } ?? true
            var stepped = false
            if rootMoved { stepped = try stepForward(cache, recording: false, head: result) }
            if !stepped { try refresh(cache) }
            return false
        }
        let digest = try recordMark(of: next, sealed: sealed, cache: cache)
        do throws(StoreError) {
            for item in batch { try cache.store(item.contents, as: item.id) }
        } catch {
            forget()
            throw StoreError.afterReplicaCommit(error, group: group, replica: "etcd")
        }
        noteCommitted(next, digest: digest, at: result.revision, over: manifestRevision, put: keys)
        return true
    }

    /// Seals every kept version in etcd under the current generation; how many it sealed again. A
    /// version deleted or pruned meanwhile, or one that does not open, is left.
    private func resealVersions(_ cache: ReplicaCache) throws(StoreError) -> Int {
        let listed: EtcdRangeResult
        do {
            listed = try client.range(prefix: versionsPrefix, keysOnly: true)
        } catch {
            throw storeError(error, "cannot list its items' versions in etcd")
        }
        var count = 0
        var start = 0
        while start < listed.keyValues.count {
            let keys = listed.keyValues[start..<min(start + Self.resealBatchCount, listed.keyValues.count)].map(\.key)
            start += keys.count
            let found: EtcdTransactionResult
            do {
                found = try client.transaction(compare: [], success: keys.map { .range(key: $0, rangeEnd: nil) })
            } catch {
                throw storeError(error, "cannot read its items' versions from etcd")
            }
            for range in found.ranges {
                guard var version = range?.keyValues.first, let id = versionItem(version.key) else { continue }
                // Put again meanwhile (a write's previous version, the same file): read again, once.
                for _ in 0..<2 {
                    // One that does not open (damaged, or under a generation no machine holds now) is left: a
                    // read of that version says so.
                    guard case .some(.some(let resealed)) = try? cache.resealed(version.value, as: id) else { break }
                    let put: EtcdTransactionResult
                    do {
                        put = try client.transaction(
                            compare: [.modRevision(key: version.key, equals: version.modRevision)],
                            success: [.put(key: version.key, value: resealed)],
                            failure: [.range(key: version.key, rangeEnd: nil)])
                    } catch {
                        throw storeError(error, "cannot seal an item's version again under the new key")
                    }
                    if put.succeeded { count += 1 }
                    guard !put.succeeded, let now = put.ranges.first??.keyValues.first else { break }
                    version = now
                }
            }
        }
        return count
    }

    /// The item whose version `key` is (`<versions prefix><id>/<generation>`).
    private func versionItem(_ key: [UInt8]) -> ItemID? {
        guard key.starts(with: versionsPrefix) else { return nil }
        let rest = key.dropFirst(versionsPrefix.count)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return nil }
        return try? ItemID(String(decoding: rest[..<slash], as: UTF8.self))
    }
}
