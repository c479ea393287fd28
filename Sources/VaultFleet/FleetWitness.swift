import VaultStore

/// What one machine of a fleet group tells the others through etcd about the group's history, sealed
/// under the manifest key (etcd can delete it, never forge or alter it):
/// - `rollback`: the machine had seen manifest `seenCounter` (sealed bytes with digest `seenDigest`)
///   and found etcd's at `replicaCounter` gone back: lower, another under that counter, or above it
///   but descending from an older state. Every machine's refresh, and a join's, then refuses a
///   manifest numbered up to the higher of the two, except the one it saw: a machine that was offline
///   meanwhile, or joins since, cannot tell by its own mark.
/// - `accepted`: an operator accepted a rollback (`resync --accept-rollback`): the manifest at
///   `newCounter` took etcd's state at `replicaCounter`, though `seenCounter` had been seen. A machine
///   whose mark is below `newCounter` says so when it takes it.
struct FleetWitness: Sendable, Equatable {
    enum Kind: UInt8, Sendable {
        case rollback = 1
        case accepted = 2
        /// The group was removed from the fleet (`removed`): `seenCounter` is its last manifest's.
        case removed = 3
    }

    var kind: Kind
    /// The highest manifest counter the machine (or, for `accepted`, any machine's report) had seen.
    var seenCounter: UInt64
    /// For `rollback`: the digest of the manifest the machine saw at `seenCounter` (zeros for `accepted`).
    var seenDigest: [UInt8]
    /// The counter of etcd's manifest when it was found (or accepted).
    var replicaCounter: UInt64
    /// For `accepted`: the counter of the manifest the acceptance wrote (0 for `rollback`).
    var newCounter: UInt64
    /// The user who ran the process that wrote it, and when (nanoseconds since the epoch).
    var userID: UInt32
    var time: Int64

    static let magic = Array("VFW1".utf8)
    static let byteCount = 4 + 1 + 8 + FleetManifest.digestByteCount + 8 + 8 + 4 + 8

    /// Whether a manifest at `counter` with digest `digest` is refused by this report: numbered up to the
    /// higher of what was seen and found, and not the state seen.
    func refuses(counter: UInt64, digest: [UInt8]) -> Bool {
        kind == .rollback && counter <= refusedThrough && !(counter == seenCounter && digest == seenDigest)
    }

    /// The highest counter this report refuses.
    var refusedThrough: UInt64 { max(seenCounter, replicaCounter) }

    func encoded() -> [UInt8] {
        var bytes = Self.magic + [kind.rawValue]
        bytes.appendBigEndian(seenCounter)
        bytes += seenDigest
        bytes.appendBigEndian(replicaCounter)
        bytes.appendBigEndian(newCounter)
        bytes.appendBigEndian(userID)
        bytes.appendBigEndian(UInt64(bitPattern: time))
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> FleetWitness? {
        guard bytes.count == byteCount, Array(bytes[..<4]) == magic, let kind = Kind(rawValue: bytes[4]) else {
            return nil
        }
        let seen = UInt64(bigEndianBytes: bytes[5..<13])
        let digestEnd = 13 + FleetManifest.digestByteCount
        let replica = UInt64(bigEndianBytes: bytes[digestEnd..<digestEnd + 8])
        let new = UInt64(bigEndianBytes: bytes[digestEnd + 8..<digestEnd + 16])
        guard seen < FleetManifest.maximumCounter, replica < FleetManifest.maximumCounter,
            new < FleetManifest.maximumCounter
        else { return nil }
        return FleetWitness(
            kind: kind, seenCounter: seen, seenDigest: Array(bytes[13..<digestEnd]), replicaCounter: replica,
            newCounter: new, userID: UInt32(bigEndianBytes: bytes[digestEnd + 16..<digestEnd + 20]),
            time: Int64(bitPattern: UInt64(bigEndianBytes: bytes[digestEnd + 20..<digestEnd + 28])))
    }
}

extension FleetManifestKey {
    private func witnessData(_ kind: FleetWitness.Kind) -> [UInt8] {
        Array("vault fleet witness".utf8) + [kind.rawValue] + groupID
    }

    /// `witness` sealed (a random nonce, then its bytes encrypted and authenticated with its kind and
    /// the group's id).
    func seal(_ witness: FleetWitness) throws(StoreError) -> [UInt8] {
        try seal(witness.encoded(), associatedData: witnessData(witness.kind), what: "a record")
    }

    /// Opens a sealed record of `kind`; `integrity` when it does not open under this group's key.
    func open(_ sealed: [UInt8], as kind: FleetWitness.Kind) throws(StoreError) -> FleetWitness {
        try open(sealed, associatedData: witnessData(kind), what: "its \(kind) record") {
            FleetWitness.decode($0).flatMap { $0.kind == kind ? $0 : nil }
        }
    }
}
