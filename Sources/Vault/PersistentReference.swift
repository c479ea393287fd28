import FoundationEssentials
import VaultStore

/// An opaque, stable reference to one item (Apple's `kSecValuePersistentRef`): it stays valid across
/// processes and across updates, including updates that change the item's primary key.
///
/// Bytes: "VPR1" | group length u8 | group | persistent id (16) | item id at issue (32 raw bytes), the
/// last being a hint that finds the item with one file read while its primary key is unchanged.
public struct PersistentReference: Hashable, Sendable, CustomStringConvertible {
    /// The reference as bytes, to store or hand back later (built when asked for: most look-ups never
    /// do).
    public var rawValue: Data {
        var bytes = Self.magic
        let groupBytes = Array(group.rawValue.utf8)
        bytes.append(UInt8(groupBytes.count))
        bytes += groupBytes
        bytes += persistentID
        bytes += itemIDHint.hashBytes
        return Data(bytes)
    }

    let group: AccessGroup
    let persistentID: Data
    let itemIDHint: ItemID

    static let magic = Array("VPR1".utf8)

    init(group: AccessGroup, persistentID: Data, itemID: ItemID) {
        self.group = group
        self.persistentID = persistentID
        self.itemIDHint = itemID
    }

    /// Parses a reference; anything that is not one is a `param` error.
    public init(_ rawValue: Data) throws(VaultError) {
        let bytes = [UInt8](rawValue)
        let invalid = VaultError(.param, "the persistent reference (\(bytes.count) bytes) is not a vault reference")
        guard bytes.count > 5, Array(bytes[0..<4]) == Self.magic else { throw invalid }
        let groupLength = Int(bytes[4])
        guard bytes.count == 5 + groupLength + 16 + 32 else { throw invalid }
        guard let name = String(validating: bytes[5..<(5 + groupLength)], as: UTF8.self) else { throw invalid }
        group = try AccessGroup(name)
        persistentID = Data(bytes[(5 + groupLength)..<(5 + groupLength + 16)])
        let hint = bytes[(5 + groupLength + 16)...]
        do {
            itemIDHint = try ItemID(hashBytes: Array(hint))
        } catch {
            throw invalid
        }
    }

    /// The group and a short form of the id, never a secret.
    public var description: String {
        "PersistentReference(group: \(group), id: \(Hex.encode(persistentID.prefix(4)))…)"
    }
}
