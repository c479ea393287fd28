import Vault
import VaultCrypto
import VaultStore
import VaultSystem

/// One machine of a fleet group, as the group's `machines` record in etcd lists it: the key a
/// rotation seals the group's next key to, and who registered it and when. The record is sealed under
/// the manifest key (etcd cannot add a machine), so a machine revoked by a rotation cannot register
/// another afterwards.
struct FleetMachineRecord: Sendable, Equatable {
    /// 8 random bytes, shown in hex.
    var id: [UInt8]
    /// Its `SealedBox` public key.
    var publicKey: [UInt8]
    /// The uid that registered it, when (nanoseconds since the epoch), and the host's name then.
    var userID: UInt32
    var time: Int64
    var name: String

    static let idByteCount = 8
    static let maximumNameByteCount = 64
    static let maximumCount = 1_000

    var idHex: String { Hex.encode(id) }

    /// The list's bytes: magic, count (2 bytes), then each machine's id, public key, uid, time, name
    /// length (1 byte) and name.
    static func encode(_ machines: [FleetMachineRecord]) -> [UInt8] {
        var bytes = Array("VFR1".utf8)
        bytes.appendBigEndian(UInt16(truncatingIfNeeded: machines.count))
        for machine in machines {
            bytes += machine.id + machine.publicKey
            bytes.appendBigEndian(machine.userID)
            bytes.appendBigEndian(UInt64(bitPattern: machine.time))
            let name = Array(machine.name.utf8.prefix(maximumNameByteCount))
            bytes.append(UInt8(name.count))
            bytes += name
        }
        return bytes
    }

    /// `name` with its control and format characters (bidirectional overrides) made `?`: any holder of
    /// the group's key writes the list, and the names go to terminals and the system log.
    static func printable(_ name: String) -> String {
        let scalars = name.unicodeScalars.map { (scalar) -> Unicode.Scalar in
            [.control, .format].contains(scalar.properties.generalCategory) ? "?" : scalar
        }
        return String(String.UnicodeScalarView(scalars))
    }

    /// Parses `encode`'s bytes; nil when they are not a list of machines.
    static func decode(_ bytes: [UInt8]) -> [FleetMachineRecord]? {
        guard bytes.count >= 6, Array(bytes[..<4]) == Array("VFR1".utf8) else { return nil }
        let count = Int(UInt16(bigEndianBytes: bytes[4..<6]))
        var machines: [FleetMachineRecord] = []
        var offset = 6
        let fixed = idByteCount + SealedBox.publicKeyByteCount + 4 + 8 + 1
        for _ in 0..<count {
            guard bytes.count >= offset + fixed else { return nil }
            let keyStart = offset + idByteCount
            let uidStart = keyStart + SealedBox.publicKeyByteCount
            let nameLength = Int(bytes[uidStart + 12])
            guard bytes.count >= offset + fixed + nameLength else { return nil }
            machines.append(
                FleetMachineRecord(
                    id: Array(bytes[offset..<keyStart]), publicKey: Array(bytes[keyStart..<uidStart]),
                    userID: UInt32(bigEndianBytes: bytes[uidStart..<uidStart + 4]),
                    time: Int64(bitPattern: UInt64(bigEndianBytes: bytes[uidStart + 4..<uidStart + 12])),
                    name: printable(String(decoding: bytes[uidStart + 13..<uidStart + 13 + nameLength], as: UTF8.self)))
            )
            offset += fixed + nameLength
        }
        return offset == bytes.count ? machines : nil
    }
}

extension FleetManifestKey {
    private var machinesData: [UInt8] { Array("vault fleet machines".utf8) + groupID }

    /// The group's list of machines, sealed.
    func seal(_ machines: [FleetMachineRecord]) throws(StoreError) -> [UInt8] {
        try seal(FleetMachineRecord.encode(machines), associatedData: machinesData, what: "its list of machines")
    }

    /// Opens the group's sealed list of machines; `integrity` when it does not open under this key.
    func openMachines(_ sealed: [UInt8]) throws(StoreError) -> [FleetMachineRecord] {
        try open(sealed, associatedData: machinesData, what: "its list of machines", decode: FleetMachineRecord.decode)
    }
}

/// This machine's own key pair for a fleet group, in the group directory's `fleet.machine` (the
/// vault's owner's alone): its id and public key, and its secret key sealed under a key derived from
/// the group's index key, which rotations keep.
///
///     "VFMK" | id (8) | public key (32) | nonce (24) | AEAD(secret key, ad = "VFMK" | id | public key | group id)
struct FleetMachineKey: Sendable {
    static let fileName = "fleet.machine"
    static let magic = Array("VFMK".utf8)
    static let sealDomain = KeyDerivation.Domain("vault.fmsk.v1")
    static let byteCount =
        4 + FleetMachineRecord.idByteCount + SealedBox.publicKeyByteCount + XChaCha20Poly1305.nonceByteCount
        + SealedBox.secretKeyByteCount + XChaCha20Poly1305.tagByteCount

    let id: [UInt8]
    let publicKey: [UInt8]
    let secretKey: SecureBytes

    /// A new key pair with a random id.
    static func make() throws(StoreError) -> FleetMachineKey {
        do {
            let (publicKey, secretKey) = try SealedBox.keyPair()
            return FleetMachineKey(
                id: try SecureRandom.bytes(count: FleetMachineRecord.idByteCount), publicKey: publicKey,
                secretKey: secretKey)
        } catch {
            throw StoreError.crypto(error, "cannot make this machine's key pair for a fleet group")
        }
    }

    private static func sealKey(_ groupKey: ReplicatedGroupKey) throws(CryptoError) -> SymmetricKey {
        try KeyDerivation.subkey(of: groupKey.indexKey, domain: sealDomain, context: groupKey.groupID)
    }

    private func associatedData(_ groupKey: ReplicatedGroupKey) -> [UInt8] {
        Self.magic + id + publicKey + groupKey.groupID
    }

    /// The file's bytes.
    func encoded(_ groupKey: ReplicatedGroupKey) throws(StoreError) -> [UInt8] {
        do {
            let nonce = try XChaCha20Poly1305.randomNonce()
            let sealed = try XChaCha20Poly1305.seal(
                secretKey, key: try Self.sealKey(groupKey), nonce: nonce, associatedData: associatedData(groupKey))
            return Self.magic + id + publicKey + nonce + sealed
        } catch {
            throw StoreError.crypto(error, "cannot seal this machine's key for a fleet group")
        }
    }

    /// This machine's key in `bytes`, the file at `path`; `integrity` when it is not one of this group's.
    init(_ bytes: [UInt8], groupKey: ReplicatedGroupKey, path: String) throws(StoreError) {
        let failure = StoreError(
            .integrity,
            "\(path) is not this machine's key for the fleet group (damaged, or another group's): remove it, and "
                + "this machine registers a new one at its next refresh (`vault group resync`); rotations made "
                + "before then leave it out", path: path)
        guard bytes.count == Self.byteCount, Array(bytes[..<4]) == Self.magic else { throw failure }
        let keyStart = 4 + FleetMachineRecord.idByteCount
        let nonceStart = keyStart + SealedBox.publicKeyByteCount
        let sealedStart = nonceStart + XChaCha20Poly1305.nonceByteCount
        id = Array(bytes[4..<keyStart])
        publicKey = Array(bytes[keyStart..<nonceStart])
        do {
            secretKey = try XChaCha20Poly1305.open(
                bytes, nonceAt: nonceStart, from: sealedStart, key: try Self.sealKey(groupKey),
                associatedData: Self.magic + Array(bytes[4..<nonceStart]) + groupKey.groupID)
        } catch {
            throw failure
        }
    }

    private init(id: [UInt8], publicKey: [UInt8], secretKey: SecureBytes) {
        self.id = id
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    /// Opens what a rotation sealed to this machine.
    func open(_ box: [UInt8]) throws(CryptoError) -> SecureBytes {
        try SealedBox.open(box, publicKey: publicKey, secretKey: secretKey)
    }

    /// This machine's record for the group's list: registered now by this process's user, under the
    /// host's name.
    func record() -> FleetMachineRecord {
        FleetMachineRecord(
            id: id, publicKey: publicKey, userID: ProcessIdentity.effectiveUserID,
            time: FileTimestampClock.now(), name: ProcessIdentity.hostName ?? "unknown")
    }
}
