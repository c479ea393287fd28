import VaultEtcd
import VaultStore
import VaultSystem

/// Whether etcd's state of the group went back: against this machine's mark (`fleet.mark`), and
/// against what other machines reported (`FleetWitness`). A machine that finds etcd gone back reports
/// it in etcd, so that one that was offline meanwhile, or joins since, refuses the older state too.
extension EtcdReplica {
    /// What a read of the group's prefix holds.
    struct GroupContents {
        var manifest: EtcdKeyValue?
        var items: [ItemID: EtcdKeyValue] = [:]
        var rollback: EtcdKeyValue?
        var accepted: EtcdKeyValue?
        var removed: EtcdKeyValue?
        var keyring: EtcdKeyValue?
        var machines: EtcdKeyValue?
    }

    /// The manifest, the items and the witness records of a range of the group's prefix (keys under
    /// `items/` that name no item id are left out: a stray key makes nothing fail).
    func contents(_ found: EtcdRangeResult) -> GroupContents { contents(of: found.keyValues) }

    /// The manifest, the items and the witness records among `keyValues`.
    func contents(of keyValues: [EtcdKeyValue]) -> GroupContents {
        var contents = GroupContents()
        for keyValue in keyValues {
            switch keyValue.key {
            case manifestKey: contents.manifest = keyValue
            case rollbackKey: contents.rollback = keyValue
            case acceptedKey: contents.accepted = keyValue
            case removedKey: contents.removed = keyValue
            case keyringKey: contents.keyring = keyValue
            case machinesKey: contents.machines = keyValue
            default:
                if keyValue.key.starts(with: itemsPrefix),
                    let id = try? ItemID(String(decoding: keyValue.key.dropFirst(itemsPrefix.count), as: UTF8.self))
                {
                    contents.items[id] = keyValue
                }
            }
        }
        return contents
    }

    /// The manifest of `opened` (a root, or an earlier build's manifest, whose sealed bytes have digest
    /// `mark.digest`) as `decode` reads and checks it with its tree, refused when it is older than this
    /// machine's mark `previous` or than a machine reported seeing, or forks from what this machine saw;
    /// a refusal against this machine's own mark is reported in etcd for the others. Its counter is
    /// checked before its tree, so that an older root is refused as such. With it, the words for a rollback that an operator
    /// accepted on another machine, when this refresh is this machine's first past it.
    func checkHistory(
        _ opened: OpenedManifest, mark: FleetMark, previous: FleetMark?, contents: GroupContents,
        cache: ReplicaCache, decode: (OpenedManifest) throws(StoreError) -> FleetManifest
    ) throws(StoreError) -> (manifest: FleetManifest, acceptance: String?) {
        let reported = try contents.rollback.map { (keyValue) throws(StoreError) in
            try sealer.open(keyValue.value, as: .rollback)
        }
        if let previous {
            // Only what the manifest itself shows is reported to the other machines: a comparison with this
            // machine's cache may also fail after a crash left the cache behind its mark.
            if let refusal = manifestRefusal(opened.counter, mark: mark, previous: previous) {
                report(seen: previous, found: opened.counter, contents: contents, reported: reported)
                throw refusal
            }
        }
        if let reported, reported.refuses(counter: opened.counter, digest: mark.digest) {
            throw StoreError(
                .integrity,
                "fleet group \(group): etcd's copy is older than another machine has seen (its manifest is at "
                    + "\(opened.counter); uid \(reported.userID) on a machine of the group had seen manifest "
                    + "\(reported.seenCounter) and found \(reported.replicaCounter) gone back, reported at "
                    + "\(UTCTimestamp.iso8601(nanosecondsSince1970: reported.time))): etcd was restored from an "
                    + "older snapshot, or a member went back" + resyncHint)
        }
        let manifest = try decode(opened)
        if let previous { try checkItemsAgainstMark(manifest, previous: previous, cache: cache) }
        guard let previous, let acceptedRecord = contents.accepted?.value else { return (manifest, nil) }
        let accepted = try sealer.open(acceptedRecord, as: .accepted)
        // Said on every machine, once: when it first takes the accepted state (whether it had seen more of
        // what was lost or not, it takes part of a history that went back).
        guard previous.counter < accepted.newCounter, accepted.newCounter <= manifest.counter else {
            return (manifest, nil)
        }
        return (
            manifest,
            "fleet group \(group): uid \(accepted.userID) accepted a rollback on a machine of the group at "
                + "\(UTCTimestamp.iso8601(nanosecondsSince1970: accepted.time)): etcd had gone back from manifest "
                + "\(accepted.seenCounter) to \(accepted.replicaCounter), and that state is the group's since manifest "
                + "\(accepted.newCounter); this machine had seen \(previous.counter)"
        )
    }

    /// The refusal of a manifest below this machine's mark, or another under the mark's counter (nil
    /// when it is neither).
    private func manifestRefusal(_ counter: UInt64, mark: FleetMark, previous: FleetMark) -> StoreError? {
        if counter < previous.counter {
            return StoreError(
                .integrity,
                "fleet group \(group): etcd's copy is older than this machine has seen (its manifest is at "
                    + "\(counter), this machine saw \(previous.counter)): etcd was restored from an older "
                    + "snapshot, or a member went back" + resyncHint)
        }
        if counter == previous.counter, mark.digest != previous.digest {
            return StoreError(
                .integrity,
                "fleet group \(group): etcd's manifest \(counter) is not the one this machine saw under "
                    + "that number (etcd was restored, then written to)" + resyncHint)
        }
        return nil
    }

    /// Refuses a manifest above the mark that lists an item as last written at or before the mark with
    /// other bytes than this machine cached since (etcd went back, then a machine that had not seen more
    /// wrote past the mark).
    private func checkItemsAgainstMark(_ manifest: FleetManifest, previous: FleetMark, cache: ReplicaCache)
        throws(StoreError)
    {
        guard manifest.counter > previous.counter else { return }
        for (id, entry) in manifest.items where entry.version <= previous.counter {
            let cached = try cache.contents(of: id)
            guard let cached, try sealer.digest(of: cached) == entry.digest else {
                throw StoreError(
                    .integrity,
                    "fleet group \(group): etcd's manifest \(manifest.counter) lists item \(id) as written at "
                        + "\(entry.version), which this machine saw (up to \(previous.counter)) "
                        + (cached == nil ? "without it" : "with another value")
                        + ": etcd went back to an older state, and was written to since" + resyncHint)
            }
        }
    }

    /// Reports in etcd that this machine saw manifest `seen` and found `found` gone back (unless a report
    /// that refuses as much is there): compared on the report and the manifest it read, so that a report
    /// never overwrites one it did not see, nor lands after a write it did not see. Best effort: the
    /// refusal stands whether or not it is written.
    private func report(seen: FleetMark, found: UInt64, contents: GroupContents, reported: FleetWitness?) {
        if let reported, reported.refusedThrough >= max(seen.counter, found) { return }
        guard let manifest = contents.manifest else { return }
        let witness = FleetWitness(
            kind: .rollback, seenCounter: seen.counter, seenDigest: seen.digest, replicaCounter: found,
            newCounter: 0, userID: ProcessIdentity.effectiveUserID, time: FileTimestampClock.now())
        guard let sealed = try? sealer.seal(witness) else { return }
        _ = try? client.transaction(
            compare: [
                .modRevision(key: rollbackKey, equals: contents.rollback?.modRevision ?? 0),
                .modRevision(key: manifestKey, equals: manifest.modRevision),
            ],
            success: [.put(key: rollbackKey, value: sealed)])
    }
}
