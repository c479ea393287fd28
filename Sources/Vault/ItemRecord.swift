import FoundationEssentials
import VaultArchive
import VaultStore

/// What one item file holds, as a VaultArchive: the class, the attributes (without group and dates,
/// which are the file's place and the fields below), the secret, the dates, a persistent id that stays
/// with the item across updates, and a generation counter (+1 on every update).
struct ItemRecord: Codable, Sendable, VersionedRecord {
    var itemClass: ItemClass
    var attributes: ItemAttributes
    var data: Data
    var created: Date
    var modified: Date
    var persistentID: Data
    var generation: UInt64

    /// The current time as the archive will give it back: a date that went through the archive once
    /// comes back equal from every later read, so the dates an add or update returns are exactly the
    /// dates later reads return.
    static func now() -> Date {
        let date = Date()
        guard let bytes = try? VaultArchive.encode(date), let back = try? VaultArchive.decode(Date.self, from: bytes)
        else { return date }
        return back
    }

    /// The attributes as returned to callers: with the group, the synchronizable flag and the dates.
    func returnedAttributes(group: AccessGroup) -> ItemAttributes {
        var result = attributes
        result.accessGroup = group
        result.synchronizable = attributes.synchronizable ?? false
        result.creationDate = created
        result.modificationDate = modified
        if itemClass == .genericPassword {
            result.service = attributes.service ?? ""
        } else {
            result.server = attributes.server ?? ""
            result.securityDomain = attributes.securityDomain ?? ""
            result.`protocol` = attributes.`protocol` ?? ""
            result.authenticationType = attributes.authenticationType ?? ""
            result.port = attributes.port ?? 0
            result.path = attributes.path ?? ""
        }
        result.account = attributes.account ?? ""
        return result
    }

    /// The canonical primary key: class, then the class's key attributes with Apple's defaults ("" or
    /// 0 or false when missing), each length-prefixed so that no two keys share bytes. The access group
    /// is not in it: it selects the directory and the id key.
    static func primaryKey(_ itemClass: ItemClass, _ a: ItemAttributes) -> [UInt8] {
        // Appended in place into one buffer: every get computes this, and a temporary array per field
        // was a measurable part of it.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96)
        func field(_ text: String) {
            let n = UInt32(text.utf8.count)
            bytes.append(UInt8(n >> 24))
            bytes.append(UInt8((n >> 16) & 0xff))
            bytes.append(UInt8((n >> 8) & 0xff))
            bytes.append(UInt8(n & 0xff))
            bytes.append(contentsOf: text.utf8)
        }
        field(itemClass.rawValue)
        switch itemClass {
        case .genericPassword:
            field(a.service ?? "")
            field(a.account ?? "")
        case .internetPassword:
            field(a.account ?? "")
            field(a.securityDomain ?? "")
            field(a.server ?? "")
            field(a.`protocol` ?? "")
            field(a.authenticationType ?? "")
            field(String(a.port ?? 0))
            field(a.path ?? "")
        }
        field((a.synchronizable ?? false) ? "1" : "0")
        return bytes
    }

    var primaryKey: [UInt8] { Self.primaryKey(itemClass, attributes) }

    /// The class key that encrypts the item's file.
    var protectionClass: ProtectionClass { attributes.accessible.protectionClass }

    /// The persistent id and generation, for the store's rollback check.
    var version: ItemVersion { ItemVersion(persistentID: [UInt8](persistentID), generation: generation) }
}
