import FoundationEssentials

/// Where a fleet group's items live besides its directory, and how to reach them: the etcd cluster and
/// the files that authenticate to it (paths and names, never a secret).
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
    /// The file with `user`'s password (its first line): readable by its owner (and a shared fleet
    /// group's Unix group) only.
    public var passwordFile: String?
    /// Whether `user`'s password may go over plain `http://` to endpoints off this machine's loopback,
    /// where anyone on the path reads it: for a lab only. Refused otherwise, before anything is sent.
    public var sendsCredentialsInTheClear = false
    /// How long a read may wait for etcd in all, over every endpoint it tries, before it is answered from
    /// this machine's cache (marked stale); in `readDeadlineRange`.
    public var readDeadlineMilliseconds = FleetSettings.defaultReadDeadlineMilliseconds

    /// The read deadline unless the settings say otherwise.
    public static let defaultReadDeadlineMilliseconds = 1000
    /// The read deadlines settings may give: long enough for a request, short enough to be one.
    public static let readDeadlineRange = 50...60_000

    /// Settings for `endpoints`.
    public init(endpoints: [String]) {
        self.endpoints = endpoints
    }

    /// Why these settings may not send etcd credentials (nil when they may): a user to authenticate as,
    /// and an `http://` endpoint off this machine's loopback, not allowed by `sendsCredentialsInTheClear`.
    package var credentialsRefusal: String? {
        guard let user, !sendsCredentialsInTheClear,
            let endpoint = endpoints.first(where: { !Self.keepsCredentialsPrivate($0) })
        else { return nil }
        return "etcd user \(user)'s password would go in clear text to \(endpoint): give https:// endpoints "
            + "(with --etcd-ca), or allow plain http for a lab (--etcd-plain-http-credentials)"
    }

    /// Whether credentials sent to `endpoint` stay private to its path: https, or http to a loopback
    /// address of this machine (127.0.0.0/8, ::1, localhost).
    static func keepsCredentialsPrivate(_ endpoint: String) -> Bool {
        guard let url = URL(string: endpoint), url.scheme?.lowercased() == "http" else { return true }
        guard let host = url.host?.lowercased() else { return false }
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
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
    /// `FleetClient.etcd(watching: true)`), when the last one failed: etcd's, the connection's or this
    /// process's message. Reads then ask etcd each time, and the first check 1 to 32 seconds after the
    /// failure starts the next watch. Nil once etcd has made a watch again, in a process that does not
    /// watch, or when the last watch ended otherwise. Read when asked, not at the last read.
    public var watchFailure: String?
    /// When this process was the first on this machine to take a state of the group that an operator
    /// accepted as a rollback on another machine (`resyncFleetGroup(_:acceptingRollback: true)`): who,
    /// when, which manifests, and what this machine had seen, in words (also sent to syslog). Nil
    /// otherwise.
    public var acceptedRollback: String?

    /// A status.
    public init(isStale: Bool, knownCurrentAt: Int64?, watchFailure: String? = nil, acceptedRollback: String? = nil) {
        self.isStale = isStale
        self.knownCurrentAt = knownCurrentAt
        self.watchFailure = watchFailure
        self.acceptedRollback = acceptedRollback
    }
}

/// What `Vault.resyncFleetGroup` found and did.
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

/// A machine registered for a fleet group: a rotation of the group's key seals the new key to each
/// machine registered and not revoked.
public struct FleetMachine: Sendable, Equatable {
    /// Its id (16 hex digits), which `Vault.rotateFleetGroup(_:revoking:)` takes.
    public var id: String
    /// The host's name when it registered.
    public var hostName: String
    /// The uid that registered it.
    public var userID: UInt32
    /// When it registered (nanoseconds since the epoch).
    public var registeredAt: Int64
    /// Whether it is the machine of the process that asked.
    public var isThisMachine: Bool

    /// A machine with these facts.
    public init(id: String, hostName: String, userID: UInt32, registeredAt: Int64, isThisMachine: Bool) {
        self.id = id
        self.hostName = hostName
        self.userID = userID
        self.registeredAt = registeredAt
        self.isThisMachine = isThisMachine
    }
}

/// What `Vault.rotateFleetGroup(_:revoking:)` did.
public struct FleetRotation: Sendable, Equatable {
    /// The generation of the group's key now current.
    public var generation: UInt32
    /// The machines the new key was sealed to (this one included).
    public var kept: [FleetMachine]
    /// The machines left out (revoked).
    public var revoked: [FleetMachine]
    /// The items sealed again under the new key.
    public var itemsResealed: Int
    /// The kept versions sealed again under the new key.
    public var versionsResealed: Int
    /// Items left under the key before, because other machines kept writing while they were sealed
    /// again: readable by every machine kept, and sealed again first by the next rotation.
    public var itemsLeft: Int

    /// A report with these figures.
    public init(
        generation: UInt32, kept: [FleetMachine], revoked: [FleetMachine], itemsResealed: Int, versionsResealed: Int,
        itemsLeft: Int = 0
    ) {
        self.generation = generation
        self.kept = kept
        self.revoked = revoked
        self.itemsResealed = itemsResealed
        self.versionsResealed = versionsResealed
        self.itemsLeft = itemsLeft
    }
}
