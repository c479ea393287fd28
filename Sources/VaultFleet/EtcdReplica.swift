import FoundationEssentials
import Synchronization
import Vault
import VaultCrypto
import VaultEtcd
import VaultStore
import VaultSystem

/// A fleet group's items in etcd, under `/vault/v2/<group id hex>/`: `items/<item id>` holds each
/// item's file, byte for byte as on disk; `manifest` and `tree/` the `FleetManifest`; `meta` the
/// registration (`EtcdReplica+Registration.swift`). Every write is one transaction that
/// compares the item's and the manifest's `mod_revision` with what the last refresh saw
/// (`create_revision` 0 for a new item) and puts the item with the next manifest. Item versions are
/// beside that prefix (`EtcdReplica+History.swift`), so that a refresh never reads them.
final class EtcdReplica: Sendable {
    let identity: FleetGroupIdentity
    let client: EtcdClient
    let rootPrefix: [UInt8]
    let itemsPrefix: [UInt8]
    let metaKey: [UInt8]
    let manifestKey: [UInt8]
    /// `rollback` and `accepted`: what machines tell each other of the group's history (`FleetWitness`).
    let rollbackKey: [UInt8]
    let acceptedKey: [UInt8]
    /// `removed`: the record that the group was removed from the fleet (`EtcdReplica+Removal.swift`).
    let removedKey: [UInt8]
    /// `keyring` and `machines`: the rotations of the group's key (`FleetKeyring`) and the machines they
    /// seal it to (`FleetMachineRecord`; `EtcdReplica+Rotation.swift`).
    let keyringKey: [UInt8]
    let machinesKey: [UInt8]
    /// `tree/`: the manifest's tree (`EtcdReplica+Manifest.swift`); `shards/..`: an earlier build's
    /// shards, and each one's index by key.
    let treePrefix: [UInt8]
    let shardsPrefix: [UInt8]
    let shardKeys: [[UInt8]]
    let shardIndex: [[UInt8]: Int]
    /// The manifest key of the group's current generation: this machine takes a new one when it finds a
    /// rotation in etcd.
    private let sealing: Mutex<FleetManifestKey>
    /// `/vault/v2/<group id hex>.versions/`: the items' kept versions.
    let versionsPrefix: [UInt8]
    let watching: Bool

    /// What the last refresh (or this process's last write) saw, and the watch that vouches for it.
    struct Seen {
        /// Every key under the group's prefix with its `mod_revision`.
        var revisions: [[UInt8]: Int64] = [:]
        /// The manifest those revisions hold (nil with `deferredTreeEpoch`), and its `mod_revision`.
        var manifest: FleetManifest?
        /// When the manifest's root alone was checked (`adoptCacheIfCurrent`), not its tree: the tree's
        /// epoch, under which a write reads its own node and leaf (`writeBasis(item:leaf:)`).
        var deferredTreeEpoch: UInt64?
        var manifestRevision: Int64 = 0
        /// `FleetManifestKey.digest(of:)` of that manifest's sealed bytes.
        var manifestDigest: [UInt8]?
        /// The `mod_revision` of the group's rollback report (0: none) those revisions hold.
        var rollbackRevision: Int64 = 0
        /// Whether `revisions` holds the manifest's alone (`adoptCacheIfCurrent`): an item's
        /// revision is then read before a write compares on it.
        var itemsUnknown = false
        /// The store revision at which `revisions` were last confirmed, and when (this process's clock).
        var confirmedRevision: Int64 = 0
        var confirmedAt: ContinuousClock.Instant?
        /// The watch, the process that started it (a forked child has no watch thread), whether etcd
        /// has made it, and the newest revision it reported a change at.
        var watch: EtcdWatch?
        var watchProcess: Int32 = 0
        var watchLive = false
        var newestChange: Int64 = 0
        /// How this process's last watch ended (nil: none has), since when the running one is live,
        /// how many failed in a row (a watch that was live for the longest delay ends a row), and when
        /// the next may start (`EtcdReplica.watchRetryDelay`).
        var watchEnd: EtcdWatchEnd?
        var watchLiveSince: ContinuousClock.Instant?
        var watchFailures = 0
        var watchRetryAt: ContinuousClock.Instant?
        /// The rollback accepted on another machine that this process's refresh took, said in words.
        var acceptedRollback: String?
    }
    let seen = Mutex(Seen())

    init(_ identity: FleetGroupIdentity, watching: Bool) throws(StoreError) {
        self.identity = identity
        self.watching = watching
        let root = "/vault/v2/" + Hex.encode(identity.groupID) + "/"
        rootPrefix = Array(root.utf8)
        itemsPrefix = Array((root + "items/").utf8)
        metaKey = Array((root + "meta").utf8)
        manifestKey = Array((root + "manifest").utf8)
        rollbackKey = Array((root + "rollback").utf8)
        acceptedKey = Array((root + "accepted").utf8)
        removedKey = Array((root + "removed").utf8)
        keyringKey = Array((root + "keyring").utf8)
        machinesKey = Array((root + "machines").utf8)
        treePrefix = Array((root + "tree/").utf8)
        shardsPrefix = Array((root + "shards/").utf8)
        shardKeys = Self.shardKeys(under: shardsPrefix)
        shardIndex = Dictionary(uniqueKeysWithValues: shardKeys.enumerated().map { ($1, $0) })
        sealing = Mutex(identity.manifestKey)
        versionsPrefix = Array(("/vault/v2/" + Hex.encode(identity.groupID) + ".versions/").utf8)
        var configuration: EtcdClient.Configuration
        do {
            configuration = try EtcdClient.Configuration(endpoints: identity.settings.endpoints)
        } catch {
            throw StoreError(.invalidName, "fleet group \(identity.group): \(error.message)")
        }
        configuration.caFile = identity.settings.caFile
        configuration.certificateFile = identity.settings.certificateFile
        configuration.keyFile = identity.settings.keyFile
        configuration.user = identity.settings.user
        guard FleetSettings.readDeadlineRange.contains(identity.settings.readDeadlineMilliseconds) else {
            throw StoreError(
                .invalidName,
                "fleet group \(identity.group): a read deadline of \(identity.settings.readDeadlineMilliseconds) ms is "
                    + "outside \(FleetSettings.readDeadlineRange.lowerBound)...\(FleetSettings.readDeadlineRange.upperBound)"
            )
        }
        configuration.readDeadlineMilliseconds = identity.settings.readDeadlineMilliseconds
        if let refusal = identity.settings.credentialsRefusal {
            throw StoreError(
                .insecureFile,
                "fleet group \(identity.group): \(refusal); nothing was sent. For a group made so, its owner "
                    + "adds the line plain-http-credentials=yes to its fleet.conf")
        }
        if let passwordFile = identity.settings.passwordFile {
            configuration.password = try identity.readPassword(passwordFile)
        }
        client = EtcdClient(configuration)
    }

    deinit {
        seen.withLock { $0.watch?.cancel() }
    }

    func storeError(_ error: EtcdError, _ what: String) -> StoreError {
        switch error.code {
        case .unavailable, .outcomeUnknown:
            return StoreError(
                .unavailable,
                "fleet group \(identity.group): \(what): \(error.message)"
                    + (error.code == .outcomeUnknown ? "" : "; nothing was changed"))
        case .authentication:
            return StoreError(.permissionDenied, "fleet group \(identity.group): \(what): \(error.message)")
        default:
            return StoreError(.io, "fleet group \(identity.group): \(what): \(error.message)")
        }
    }

    func itemKey(_ id: ItemID) -> [UInt8] { itemsPrefix + Array(id.rawValue.utf8) }

    var group: GroupName { identity.group }

    /// Seals and opens the group's manifest and records, and digests its items: the key of the group's
    /// current generation.
    var sealer: FleetManifestKey {
        get { sealing.withLock { $0 } }
        set { sealing.withLock { $0 = newValue } }
    }

    /// The hint every refusal of the replica's state ends with.
    var resyncHint: String { FleetManifestKey.resyncHint(group) }

    // MARK: Refresh

    /// Brings the cache up to date with everything etcd holds of the group, checked against the
    /// manifest, this machine's mark and the other machines' reports. With `recording`, the revisions
    /// that made it current are recorded for this machine's next processes (`FleetCacheRecord`).
    /// Returns what it read.
    @discardableResult
    func refresh(_ cache: ReplicaCache, recording: Bool = false) throws(StoreError) -> GroupContents {
        let started = ContinuousClock.now
        var found = try readGroup()
        var contents = contents(found)
        for _ in 0..<3 {
            if let removed = contents.removed {
                throw try removal(removed.value, groupKeysRemain: contents.manifest != nil)
            }
            guard let keyring = contents.keyring else { break }
            let opens = { (sealer: FleetManifestKey) in contents.manifest.map { (try? sealer.open($0.value)) != nil } }
            let openedWhenRead = opens(sealer)
            try adoptRotations(keyring.value, cache: cache)
            // A root that did not open under the key of before could not say where its tree is: read again
            // under the new one.
            guard openedWhenRead == false, opens(sealer) == true else { break }
            found = try readGroup()
            contents = self.contents(found)
        }
        let items = contents.items
        guard let manifestValue = contents.manifest else {
            throw StoreError(
                .integrity,
                "fleet group \(group): etcd holds no manifest for it (deleted outside the vault, or etcd was restored "
                    + "to before the group was made)" + resyncHint)
        }
        let opened = try sealer.open(manifestValue.value)
        let mark = FleetMark(counter: opened.counter, digest: try sealer.digest(of: manifestValue.value))
        let previous = try cache.highWaterMark()
        let (manifest, acceptance) = try checkHistory(
            opened, mark: mark, previous: previous, contents: contents, cache: cache
        ) { (opened) throws(StoreError) in try self.manifest(opened, in: found.keyValues) }
        for (id, keyValue) in items {
            guard let expected = manifest.items[id] else {
                throw StoreError(
                    .integrity,
                    "fleet group \(group): item \(id) is in etcd but not in the group's manifest (brought back after "
                        + "its deletion, or planted; remove its key from etcd if so)" + resyncHint)
            }
            guard try sealer.digest(of: keyValue.value) == expected.digest else {
                throw StoreError(
                    .integrity,
                    "fleet group \(group): item \(id) in etcd is not the version the group's manifest lists (an older "
                        + "value of itself, or another item's)" + resyncHint)
            }
        }
        for id in manifest.items.keys where items[id] == nil {
            throw StoreError(
                .integrity,
                "fleet group \(group): item \(id), which the group's manifest lists, is missing from etcd (deleted "
                    + "outside the vault)" + resyncHint)
        }
        // The mark first: a crash never leaves cached items newer than it.
        if previous != mark { try cache.record(mark) }
        for (id, keyValue) in items where try cache.contents(of: id) != keyValue.value {
            try cache.store(keyValue.value, as: id)
        }
        for id in try cache.cachedIDs() where items[id] == nil { try cache.remove(id) }
        let now = started
        seen.withLock { seen in
            seen.revisions = Self.revisions(found).filter {
                $0.key.starts(with: itemsPrefix) || $0.key == manifestKey || $0.key == rollbackKey
            }
            seen.manifest = manifest
            seen.deferredTreeEpoch = nil
            seen.manifestRevision = manifestValue.modRevision
            seen.manifestDigest = mark.digest
            seen.rollbackRevision = contents.rollback?.modRevision ?? 0
            seen.itemsUnknown = false
            seen.confirmedRevision = found.revision
            seen.confirmedAt = now
            if let acceptance { seen.acceptedRollback = acceptance }
        }
        try finishRefresh(
            cache,
            reaching: FleetCacheRecord(
                manifestRevision: manifestValue.modRevision, rollbackRevision: contents.rollback?.modRevision ?? 0,
                markDigest: mark.digest),
            at: found.revision, recording: recording, acceptance: acceptance, machines: contents.machines)
        return contents
    }

    /// What a refresh (complete, or a step) that brought the cache to `record`'s state, read at
    /// `revision`, does last: says that a rollback accepted elsewhere was taken, records the state for
    /// this machine's next processes (`recording`), watches from the next revision, and registers this
    /// machine in `machines`.
    func finishRefresh(
        _ cache: ReplicaCache, reaching record: FleetCacheRecord, at revision: Int64, recording: Bool,
        acceptance: String?, machines: EtcdKeyValue?
    ) throws(StoreError) {
        if let acceptance { SystemLog.notice("vault: \(acceptance) (vault at \(cache.vaultPath))") }
        if recording { try cache.recordCurrent(record) }
        watchIfNeeded(from: revision + 1)
        try registerIfNeeded(machines, cache: cache)
    }

    /// Keys per page of a refresh: at first at most 32 item files of up to 768 KiB, 32 MiB of response
    /// in base64, under the transport's 64 MiB limit; then as many as the largest file read so far
    /// allows in `EtcdClient.pageValueBytes`, up to `maximumPageSize`.
    static let pageSize = 32
    static let maximumPageSize = 1024

    // MARK: Writes

    /// The largest item file a fleet group takes: etcd refuses requests over 1.5 MiB by default
    /// (`--max-request-bytes`), a write carries the manifest's root, the item's node and leaf too, and the
    /// JSON carries them in base64 (4/3 of their size).
    static let maximumItemFileByteCount = 786_432

    func write(_ id: ItemID, contents: [UInt8], history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError) {
        guard contents.count <= Self.maximumItemFileByteCount else {
            throw StoreError(
                .invalidName,
                "fleet group \(group): the item's file would be \(contents.count) bytes; a fleet group's items are "
                    + "at most \(Self.maximumItemFileByteCount) bytes encrypted and padded (etcd refuses larger "
                    + "requests), about 760 KB of secret; nothing was changed")
        }
        let key = itemKey(id)
        let digest = try sealer.digest(of: contents)
        try commit(
            item: key, leaf: FleetManifest.leaf(of: id),
            change: .put(key: key, value: contents),
            history: try historyOperations(id, history, beside: contents.count),
            cache: cache,
            manifest: { $0.items[id] = FleetManifest.Entry(digest: digest, version: $0.counter) },
            isOwn: { $0?.value == contents })
    }

    func delete(_ id: ItemID, history: ReplicaHistoryStep?, cache: ReplicaCache) throws(StoreError) {
        let key = itemKey(id)
        if seen.withLock({ !$0.itemsUnknown && $0.revisions[key] == nil }) {
            // Not in etcd as this process last saw it, which the watch may have vouched for before
            // reporting another machine's add: ask etcd, and rerun on a fresh read if it is there.
            let found: EtcdRangeResult
            do {
                found = try client.range(key)
            } catch {
                throw storeError(error, "cannot read an item from etcd")
            }
            guard !found.keyValues.isEmpty else { return }
            forget()
            throw StoreError(.conflict, "fleet group \(group): the item was added on another machine meanwhile")
        }
        try commit(
            item: key, leaf: FleetManifest.leaf(of: id),
            change: .delete(key: key, rangeEnd: nil), history: try historyOperations(id, history, beside: 0),
            cache: cache,
            manifest: { _ = $0.items.removeValue(forKey: id) },
            isOwn: { $0 == nil })
    }

    /// One write of the group: `change` to item key `item` with the next manifest (`manifest` applied
    /// to the last one seen, of which the item's `leaf` at least is read) and the `history` operations
    /// on the item's versions, compared on the item's and the manifest's revisions (an item not seen:
    /// on its absence, `create_revision` 0). A failed compare whose item (`isOwn`) and manifest are this
    /// write's own (its answer was lost, and it was applied: manifests carry a random nonce) is its
    /// success. The mark is raised before the
    /// cache changes.
    private func commit(
        item: [UInt8], leaf: Int, change: EtcdOperation, history: [EtcdOperation], cache: ReplicaCache,
        manifest update: (inout FleetManifest) -> Void, isOwn: (EtcdKeyValue?) -> Bool
    ) throws(StoreError) {
        let basis = try writeBasis(item: item, leaf: leaf)
        let (last, manifestRevision, itemRevision) = (basis.manifest, basis.manifestRevision, basis.itemRevision)
        let rollbackRevision = basis.rollbackRevision
        guard var next = last else {
            throw StoreError(.conflict, "fleet group \(group): not read from etcd since its last failure")
        }
        next.counter += 1
        update(&next)
        let (sealed, tree) = try sealer.seal(&next, over: last)
        let treeWrites = try treeOperations(tree)
        let result: EtcdTransactionResult
        do {
            result = try client.transaction(
                compare: [
                    itemRevision.map { .modRevision(key: item, equals: $0) } ?? .createRevision(key: item, equals: 0),
                    .modRevision(key: manifestKey, equals: manifestRevision),
                    // A rollback report made since (by a machine that found etcd gone back) stops the write.
                    .modRevision(key: rollbackKey, equals: rollbackRevision),
                ],
                success: [change, .put(key: manifestKey, value: sealed)] + treeWrites + history,
                failure: [.range(key: item, rangeEnd: nil), .range(key: manifestKey, rangeEnd: nil)])
        } catch {
            // Its outcome unknown: a new tree is left (never read unless its root landed).
            throw storeError(error, "cannot write an item to etcd")
        }
        var revision = result.revision
        if !result.succeeded {
            guard result.ranges.count == 2, let itemRange = result.ranges[0], let manifestRange = result.ranges[1]
            else {
                // Nothing is known of what etcd holds now: the next use reads it again.
                forget()
                throw storeError(
                    EtcdError(.malformedResponse, "etcd answered a failed transaction without its two reads"),
                    "cannot write an item to etcd")
            }
            guard let current = manifestRange.keyValues.first, current.value == sealed,
                isOwn(itemRange.keyValues.first)
            else {
                // What this process saw is stale: the rerun refreshes. Past another machine's write of another
                // item (the root moved on, the item is as seen) it steps from what it saw; else (the item
                // changed too, perhaps behind the manifest's back) it refreshes without it.
                discardTree(tree, current: manifestRange.keyValues.first?.value)
                if let current = manifestRange.keyValues.first, current.modRevision != manifestRevision,
                    itemRange.keyValues.first?.modRevision == itemRevision
                {
                    unconfirm()
                } else {
                    forget()
                }
                throw StoreError(.conflict, "fleet group \(group): it changed on another machine meanwhile")
            }
            revision = current.modRevision
        }
        let digest = try recordMark(of: next, sealed: sealed, cache: cache)
        if case .delete = change {
            noteCommitted(next, digest: digest, at: revision, over: manifestRevision, deleted: item)
        } else {
            noteCommitted(next, digest: digest, at: revision, over: manifestRevision, put: [item])
        }
    }
}
