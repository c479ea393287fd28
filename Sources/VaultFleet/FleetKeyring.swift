import VaultCrypto
import VaultStore

/// A fleet group's last rotations, its `keyring` key in etcd. Each gives generation `generation` of
/// the group's key to the machines the rotation kept, each sealed to its own key (`FleetMachineKey`),
/// the whole sealed under the manifest key of the generation before: etcd cannot make one, and a
/// machine revoked by an earlier rotation lacks that key. A machine that was away walks the
/// rotations it missed, one generation at a time.
///
///     keyring  = "VFK1" | count u8 | count × (generation u32 | length u32 | rotation)
///     rotation = AEAD under the manifest key of generation - 1 of: count u16 | count × (machine id 8 | box)
///     box      = SealedBox to the machine of: group id (16) | generation u32 | key (32)
struct FleetKeyring: Sendable, Equatable {
    struct Rotation: Sendable, Equatable {
        var generation: UInt32
        var sealed: [UInt8]
    }

    var rotations: [Rotation]

    /// The generation of the last rotation (nil: none).
    var latestGeneration: UInt32? { rotations.map(\.generation).max() }

    static let magic = Array("VFK1".utf8)
    /// How many rotations etcd keeps at most: a machine away for more needs a new key file.
    static let keptRotations = 16
    static let boxByteCount = 16 + 4 + SymmetricKey.byteCount + SealedBox.overheadByteCount
    /// The most bytes the keyring takes: older rotations go first (it is read with every complete
    /// refresh, and written in a rotation's request with the manifest).
    static let maximumByteCount = 512 * 1024

    func encoded() -> [UInt8] {
        var bytes = Self.magic + [UInt8(truncatingIfNeeded: rotations.count)]
        for rotation in rotations {
            bytes.appendBigEndian(rotation.generation)
            bytes.appendBigEndian(UInt32(truncatingIfNeeded: rotation.sealed.count))
            bytes += rotation.sealed
        }
        return bytes
    }

    static func decode(_ bytes: [UInt8]) -> FleetKeyring? {
        guard bytes.count >= 5, Array(bytes[..<4]) == magic else { return nil }
        var rotations: [Rotation] = []
        var offset = 5
        for _ in 0..<Int(bytes[4]) {
            guard bytes.count >= offset + 8 else { return nil }
            let generation = UInt32(bigEndianBytes: bytes[offset..<offset + 4])
            let length = Int(UInt32(bigEndianBytes: bytes[offset + 4..<offset + 8]))
            guard bytes.count - offset - 8 >= length else { return nil }
            rotations.append(Rotation(generation: generation, sealed: Array(bytes[offset + 8..<offset + 8 + length])))
            offset += 8 + length
        }
        return offset == bytes.count ? FleetKeyring(rotations: rotations) : nil
    }

    /// Generation `generation`'s `key` for group `groupID`, sealed to the machine with `publicKey`.
    static func box(_ key: SymmetricKey, generation: UInt32, groupID: [UInt8], to publicKey: [UInt8])
        throws(CryptoError) -> [UInt8]
    {
        var header = groupID
        header.appendBigEndian(generation)
        return try SealedBox.seal(try SecureBytes.joined([try SecureBytes(copying: header), key.bytes]), to: publicKey)
    }

    /// The key in `box`, opened by `machine`: nil when it is not generation `generation`'s of group
    /// `groupID`, or not sealed to this machine.
    static func key(in box: [UInt8], opener machine: FleetMachineKey, generation: UInt32, groupID: [UInt8])
        -> SymmetricKey?
    {
        var header = groupID
        header.appendBigEndian(generation)
        guard let payload = try? machine.open(box), payload.count == header.count + SymmetricKey.byteCount,
            payload.unprotectedPrefix(header.count) == header
        else { return nil }
        return try? SymmetricKey(try payload.copying(header.count..<payload.count))
    }
}

extension FleetManifestKey {
    private func rotationData(_ generation: UInt32) -> [UInt8] {
        var data = Array("vault fleet rotation".utf8) + groupID
        data.appendBigEndian(generation)
        return data
    }

    /// The rotation to generation `generation` (this key's generation + 1): each kept machine's id with
    /// its box, sealed.
    func sealRotation(to generation: UInt32, boxes: [(id: [UInt8], box: [UInt8])]) throws(StoreError) -> [UInt8] {
        var plain: [UInt8] = []
        plain.appendBigEndian(UInt16(truncatingIfNeeded: boxes.count))
        for entry in boxes { plain += entry.id + entry.box }
        return try seal(plain, associatedData: rotationData(generation), what: "a rotation of its key")
    }

    /// The boxes of the rotation to generation `generation`, by machine id; `integrity` when it does not
    /// open under this key.
    func openRotation(_ sealed: [UInt8], to generation: UInt32) throws(StoreError) -> [[UInt8]: [UInt8]] {
        try open(sealed, associatedData: rotationData(generation), what: "the rotation to generation \(generation)") {
            (plain) -> [[UInt8]: [UInt8]]? in
            guard plain.count >= 2 else { return nil }
            let count = Int(UInt16(bigEndianBytes: plain[0..<2]))
            let entry = FleetMachineRecord.idByteCount + FleetKeyring.boxByteCount
            guard plain.count == 2 + count * entry else { return nil }
            var boxes: [[UInt8]: [UInt8]] = [:]
            for index in 0..<count {
                let start = 2 + index * entry
                boxes[Array(plain[start..<start + FleetMachineRecord.idByteCount])] = Array(
                    plain[start + FleetMachineRecord.idByteCount..<start + entry])
            }
            return boxes
        }
    }
}
