import Synchronization
import VaultCrypto
import VaultSystem

/// Where a fleet group's items live besides its directory, and how to reach it: what
/// `groups/<group>/fleet.conf` holds (`name=value` lines: paths and names, never a secret).
public struct FleetSettings: Sendable, Hashable {
    /// etcd client endpoints, `http(s)://HOST:PORT`.
    public var endpoints: [String]
    /// A CA certificate file to verify the members with.
    public var caFile: String?
    /// A client certificate and its key (PEM files).
    public var certificateFile: String?
    /// The private key of `certificateFile`.
    public var keyFile: String?
    /// An etcd user, and the file that holds its password (the password itself is never stored here).
    public var user: String?
    /// The file with `user`'s password (its first line).
    public var passwordFile: String?

    /// Settings for `endpoints`.
    public init(endpoints: [String]) {
        self.endpoints = endpoints
    }

    static let fileName = "fleet.conf"

    /// The file's text.
    func encoded() -> String {
        var lines = endpoints.map { "endpoint=\($0)" }
        for (name, value) in [
            ("ca-file", caFile), ("certificate-file", certificateFile), ("key-file", keyFile), ("user", user),
            ("password-file", passwordFile),
        ] {
            if let value { lines.append("\(name)=\(value)") }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses the file's text; nil when it is not one.
    static func decode(_ text: String) -> FleetSettings? {
        var settings = FleetSettings(endpoints: [])
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let equals = line.firstIndex(of: "=") else { return nil }
            let name = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            switch name {
            case "endpoint": settings.endpoints.append(value)
            case "ca-file": settings.caFile = value
            case "certificate-file": settings.certificateFile = value
            case "key-file": settings.keyFile = value
            case "user": settings.user = value
            case "password-file": settings.passwordFile = value
            default: return nil
            }
        }
        return settings.endpoints.isEmpty ? nil : settings
    }
}

/// A fleet group's replica: the copy of its items that every machine shares (etcd), which the group
/// directory caches byte for byte, with the group's sealed manifest (`FleetManifest`). Made by the
/// factory that `VaultStore.fleetReplicas` holds (the `VaultFleet` module installs one; the store
/// itself never links a network client).
public protocol GroupReplica: AnyObject, Sendable {
    /// Registers a new fleet group (its id, a check value of its key, never the key, and an empty
    /// manifest); refuses an id that is registered already.
    func register(check: [UInt8]) throws(StoreError)
    /// Checks a joining machine's key against the registration.
    func verifyRegistration(check: [UInt8]) throws(StoreError)
    /// Whether the replica is known, without asking it, to hold what the last refresh saw: a watch on
    /// it is live, has reported no change since, and the last check (`isCurrent`) was within a second.
    /// Always false for a replica that does not watch (a short-lived process asks every time).
    func isKnownCurrent() -> Bool
    /// Why this process has no working watch of the replica, when the last one ended by a failure
    /// (reads then ask the replica each time, and the first check after a delay starts the next); nil
    /// once the replica has made a watch again, when none was started, or when the last ended otherwise.
    func watchFailure() -> String?
    /// Whether the replica holds exactly what the last refresh saw (a read of its keys and revisions,
    /// no values); `unavailable` when it cannot be asked.
    func isCurrent() throws(StoreError) -> Bool
    /// Brings `cache` up to date with the replica: every item the replica has, and none it lacks, once
    /// the manifest opens, is no older than `cache`'s high-water mark, and lists exactly the items
    /// there (`integrity` otherwise: a rollback, a deleted, replayed or replaced item).
    func refresh(_ cache: ReplicaCache) throws(StoreError)
    /// Stores item `id`'s sealed file `contents` in the replica with the next manifest, only if the
    /// replica's copy is still the one the last refresh saw (none: only if there is none); `conflict`
    /// otherwise. Raises `cache`'s high-water mark to the new manifest.
    func write(_ id: ItemID, contents: [UInt8], cache: ReplicaCache) throws(StoreError)
    /// Removes item `id` from the replica with the next manifest, only if its copy is still the one the
    /// last refresh saw.
    func delete(_ id: ItemID, cache: ReplicaCache) throws(StoreError)
    /// Refreshes `cache` from a fresh read; with `acceptingRollback`, first makes what the replica
    /// holds now the group's state (its items that open under the group's keys, a manifest above every
    /// counter seen, items that do not open removed), for an operator who knows etcd was restored.
    func resync(_ cache: ReplicaCache, acceptingRollback: Bool) throws(StoreError) -> FleetResync
    /// Forgets what the last refresh saw (the cache may not match it), so that the next check refreshes.
    func forget()
}

/// How this process last answered a read of a fleet group: from a cache that etcd confirmed, or,
/// with etcd out of reach, from the cache as it was when last confirmed.
public struct FleetCacheStatus: Sendable, Equatable {
    /// Whether the answer came from the cache without etcd's confirmation (etcd out of reach).
    public var isStale: Bool
    /// When the cache was last known to match etcd, in nanoseconds since the epoch (a lower bound: in
    /// a process that has not reached etcd, when this machine last took a change from it); nil when
    /// it never was.
    public var knownCurrentAt: Int64?
    /// Why this process has no working watch of the group (a long-lived handle's,
    /// `VaultFleet.install(watching:)`), when the last one failed: etcd's, the connection's or this
    /// process's message. Reads then ask etcd each time, and the first check 1 to 32 seconds after the
    /// failure starts the next watch. Nil once etcd has made a watch again, in a process that does not
    /// watch, or when the last watch ended otherwise. Read when asked, not at the last read.
    public var watchFailure: String?

    /// A status.
    public init(isStale: Bool, knownCurrentAt: Int64?, watchFailure: String? = nil) {
        self.isStale = isStale
        self.knownCurrentAt = knownCurrentAt
        self.watchFailure = watchFailure
    }
}

/// What `GroupReplica.resync` found and did.
public struct FleetResync: Sendable, Equatable {
    /// The counter of the newest manifest this machine had seen, if any.
    public var previousCounter: UInt64?
    /// The counter of the replica's manifest before the resync (nil: it had none that opened).
    public var replicaCounter: UInt64?
    /// The counter of the manifest after it.
    public var counter: UInt64
    /// The items the group holds after it.
    public var itemCount: Int
    /// Items removed from the replica because they did not open under the group's keys.
    public var removedCount: Int

    /// A report with these figures.
    public init(previousCounter: UInt64?, replicaCounter: UInt64?, counter: UInt64, itemCount: Int, removedCount: Int) {
        self.previousCounter = previousCounter
        self.replicaCounter = replicaCounter
        self.counter = counter
        self.itemCount = itemCount
        self.removedCount = removedCount
    }
}

/// What a replica may do to its group's directory: read, store and remove item files (each checked
/// first: a replica's bytes are authenticated like any item file before they are cached).
public struct ReplicaCache {
    let store: VaultStore
    let group: GroupName
    /// How many files the replica stored or removed.
    final class Changes {
        var count = 0
    }
    let changes = Changes()

    init(store: VaultStore, group: GroupName) {
        self.store = store
        self.group = group
    }

    /// The ids of the items cached now.
    public func cachedIDs() throws(StoreError) -> [ItemID] {
        try store.itemIDs(in: group, sorted: false)
    }

    /// The cached file of item `id`, or nil.
    public func contents(of id: ItemID) throws(StoreError) -> [UInt8]? {
        try store.cachedItemFile(ItemLocation(group: group, id: id))
    }

    /// Caches `contents` as item `id`'s file, after checking that it opens under the group's keys as
    /// that item (a value moved from another key, group or vault fails here: `integrity`).
    public func store(_ contents: [UInt8], as id: ItemID) throws(StoreError) {
        try store.cacheItemFile(contents, as: ItemLocation(group: group, id: id))
        changes.count += 1
    }

    /// Removes item `id` from the cache.
    public func remove(_ id: ItemID) throws(StoreError) {
        try store.uncacheItemFile(ItemLocation(group: group, id: id))
        changes.count += 1
    }

    /// Whether `contents` opens under the group's keys as item `id` (nothing is stored): false when it
    /// fails its integrity check; any other failure (a locked class, I/O) is thrown, never taken as
    /// "does not open".
    public func opens(_ contents: [UInt8], as id: ItemID) throws(StoreError) -> Bool {
        do {
            try store.checkItemFile(contents, as: ItemLocation(group: group, id: id))
            return true
        } catch  where error.code == .integrity {
            return false
        }
    }

    /// The newest manifest this machine has seen of the group, or nil before its first.
    public func highWaterMark() throws(StoreError) -> FleetMark? {
        try store.fleetMark(group)
    }

    /// Durably records `mark` as the newest manifest seen (before any item of it is cached, so that a
    /// crash never leaves items newer than the mark).
    public func record(_ mark: FleetMark) throws(StoreError) {
        try store.recordFleetMark(mark, group: group)
    }
}

/// Who a fleet group is, for its replica: its name, id, manifest key and the settings of `fleet.conf`.
public struct FleetGroupIdentity: Sendable {
    /// The group's name.
    public let group: GroupName
    /// The group's 16-byte id, the same on every machine.
    public let groupID: [UInt8]
    /// Seals and opens the group's manifest.
    public let manifestKey: FleetManifestKey
    /// How to reach the replica.
    public let settings: FleetSettings
    /// The uid of the vault's owner, who wrote `settings`.
    public let vaultOwnerID: UInt32

    /// The identity of fleet group `group` whose key file is `file`, in a vault of `vaultOwnerID`.
    init(group: GroupName, file: GroupKeyFile, settings: FleetSettings, vaultOwnerID: UInt32) throws(StoreError) {
        self.group = group
        groupID = file.groupID
        manifestKey = try FleetManifestKey(file: file, group: group)
        self.settings = settings
        self.vaultOwnerID = vaultOwnerID
    }
}

extension VaultStore {
    /// Makes the replica of a fleet group; nil until a module that can reach etcd installs one.
    public static let fleetReplicas = Mutex<(@Sendable (FleetGroupIdentity) throws(StoreError) -> GroupReplica)?>(nil)
}
