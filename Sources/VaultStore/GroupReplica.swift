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
/// directory caches byte for byte. Made by the factory that `VaultStore.fleetReplicas` holds (the
/// `VaultFleet` module installs one; the store itself never links a network client).
public protocol GroupReplica: AnyObject, Sendable {
    /// Registers a new fleet group (its id and a check value of its key, never the key); refuses an
    /// id that is registered already.
    func register(check: [UInt8]) throws(StoreError)
    /// Checks a joining machine's key against the registration.
    func verifyRegistration(check: [UInt8]) throws(StoreError)
    /// Whether the replica holds exactly what the last refresh saw (a read of its keys and revisions,
    /// no values); `unavailable` when it cannot be asked.
    func isCurrent() throws(StoreError) -> Bool
    /// Brings `cache` up to date with the replica: every item the replica has, and none it lacks.
    func refresh(_ cache: ReplicaCache) throws(StoreError)
    /// Stores item `id`'s sealed file `contents` in the replica, only if the replica's copy is still the
    /// one the last refresh saw (none: only if there is none); `conflict` otherwise.
    func write(_ id: ItemID, contents: [UInt8]) throws(StoreError)
    /// Removes item `id` from the replica, only if its copy is still the one the last refresh saw.
    func delete(_ id: ItemID) throws(StoreError)
    /// Forgets what the last refresh saw (the cache may not match it), so that the next check refreshes.
    func forget()
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
}

/// Who a fleet group is, for its replica: its name, id and the settings of `fleet.json`.
public struct FleetGroupIdentity: Sendable {
    /// The group's name.
    public let group: GroupName
    /// The group's 16-byte id, the same on every machine.
    public let groupID: [UInt8]
    /// How to reach the replica.
    public let settings: FleetSettings
}

extension VaultStore {
    /// Makes the replica of a fleet group; nil until a module that can reach etcd installs one.
    public static let fleetReplicas = Mutex<(@Sendable (FleetGroupIdentity) throws(StoreError) -> GroupReplica)?>(nil)
}
