import VaultEtcd
import VaultStore

/// A fleet group's item history in etcd: item `id`'s version at generation `g` is its sealed file
/// under `/vault/v2/<group id hex>.versions/<id>/<g, 16 hex digits>`, beside the group's prefix so that
/// refreshes and the watch never read them. A version is what the item's file was at that generation,
/// which never changes, so a write may put the version it replaces before it commits (a large item's
/// must, to stay under etcd's request limit): that version, put by a write that then lost its compare,
/// holds the same bytes as the next writer's. The manifest does not list versions: etcd can drop one unseen (a
/// version is checked against its number when read, so it cannot be another's).
extension EtcdReplica {
    /// The prefix of item `id`'s versions.
    private func versionsPrefix(of id: ItemID) -> [UInt8] {
        versionsPrefix + Array(id.rawValue.utf8) + [UInt8(ascii: "/")]
    }

    /// The key of item `id`'s version at `generation`.
    private func versionKey(_ id: ItemID, generation: UInt64) -> [UInt8] {
        let key = versionsPrefix(of: id)
        var bytes: [UInt8] = []
        generation.forEachBigEndianByte { bytes.append($0) }
        return key + Array(Hex.encode(bytes).utf8)
    }

    /// The operations of a write's history step, to go in its transaction: the kept versions' puts and
    /// the removal of those past the bound. When the previous version and the item's file
    /// (`itemByteCount`) would exceed what one request takes, the previous version is put first, in a
    /// transaction of its own (a delete's tombstone, small, always goes with the delete: a delete that
    /// loses its compare leaves none).
    func historyOperations(_ id: ItemID, _ step: ReplicaHistoryStep?, beside itemByteCount: Int)
        throws(StoreError) -> [EtcdOperation]
    {
        guard let step else { return [] }
        var operations: [EtcdOperation] = []
        if let previous = step.previous {
            let put = EtcdOperation.put(key: versionKey(id, generation: previous.generation), value: previous.contents)
            if itemByteCount + previous.contents.count > Self.maximumItemFileByteCount {
                do {
                    _ = try client.transaction(compare: [], success: [put])
                } catch {
                    throw storeError(error, "cannot keep an item's previous version in etcd")
                }
            } else {
                operations.append(put)
            }
        }
        if let tombstone = step.tombstone {
            operations.append(.put(key: versionKey(id, generation: tombstone.generation), value: tombstone.contents))
        }
        guard step.oldestKept > 0 else { return operations }
        return operations + [
            .delete(key: versionsPrefix(of: id), rangeEnd: versionKey(id, generation: step.oldestKept))
        ]
    }

    /// The generations of item `id`'s versions in etcd, oldest first.
    func versionGenerations(of id: ItemID) throws(StoreError) -> [UInt64] {
        let prefix = versionsPrefix(of: id)
        let found: EtcdRangeResult
        do {
            found = try client.range(prefix: prefix, keysOnly: true)
        } catch {
            throw storeError(error, "cannot read an item's history from etcd")
        }
        return found.keyValues.compactMap { Self.generation(ofKey: $0.key, prefix: prefix) }.sorted()
    }

    /// Item `id`'s file at version `generation`, and its key (for messages); nil when etcd has none.
    func version(of id: ItemID, generation: UInt64) throws(StoreError) -> (contents: [UInt8], place: String)? {
        let key = versionKey(id, generation: generation)
        let found: EtcdRangeResult
        do {
            found = try client.range(key)
        } catch {
            throw storeError(error, "cannot read an item's version from etcd")
        }
        guard let value = found.keyValues.first?.value else { return nil }
        return (value, "etcd key \(String(decoding: key, as: UTF8.self)) (fleet group \(group))")
    }

    /// Removes every version of item `id` from etcd.
    func purgeVersions(of id: ItemID) throws(StoreError) {
        let prefix = versionsPrefix(of: id)
        do {
            _ = try client.transaction(
                compare: [], success: [.delete(key: prefix, rangeEnd: EtcdClient.rangeEnd(ofPrefix: prefix))])
        } catch {
            throw storeError(error, "cannot remove an item's history from etcd")
        }
    }

    /// The generation a version key under `prefix` names; nil for any other key.
    static func generation(ofKey key: [UInt8], prefix: [UInt8]) -> UInt64? {
        guard key.count == prefix.count + 16, key.starts(with: prefix) else { return nil }
        var generation: UInt64 = 0
        for digit in key[prefix.count...] {
            guard let value = Hex.value(ofDigit: digit) else { return nil }
            generation = generation << 4 | UInt64(value)
        }
        // Above every generation a writer makes: a key that etcd (or whoever writes it) made up, which
        // would overflow the numbering of the item's next version.
        return generation < ItemHistory.maximumGeneration ? generation : nil
    }
}
