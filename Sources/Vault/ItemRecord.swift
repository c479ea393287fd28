import FoundationEssentials
import VaultCrypto
import VaultStore

/// What one item file holds (`ItemRecordCodec`): the class, the attributes (without group and dates,
/// which are the file's place and the fields below), the secret, the dates, a persistent id that stays
/// with the item across updates, and a generation counter (+1 on every update).
struct ItemRecord: Sendable, VersionedRecord {
    var itemClass: ItemClass
    /// The attributes behind one immutable reference: records are copied into caches, scans and
    /// results by the hundred thousand, and `ItemAttributes` is 280 bytes inline; a copy of a record
    /// shares them (a change makes a new box).
    private var box: AttributesBox
    var data: Data
    var created: Date
    var modified: Date
    var persistentID: Data
    var generation: UInt64
    /// Who wrote this version: the program (`ItemEngine.Author`) and the effective uid; nil in records
    /// written before they were kept.
    var client: String?
    var writer: UInt32?
    /// Whether this is a tombstone: the record of a deletion, kept in the item's history only.
    var isDeletion = false

    var attributes: ItemAttributes {
        get { box.value }
        set { box = AttributesBox(newValue) }
    }

    /// The synchronizable flag, read without building `attributes`.
    var synchronizable: Bool? { box.synchronizable }

    /// Whether the attribute filters of `filter` match this record (`ItemAttributes.matches`), read
    /// from its box without building `attributes`: a get and every item of a scan ask it.
    func attributesMatch(_ filter: ItemAttributes) -> Bool {
        filter.matches(box, created: created, modified: modified)
    }

    init(
        itemClass: ItemClass, attributes: ItemAttributes, data: Data, created: Date, modified: Date,
        persistentID: Data, generation: UInt64
    ) {
        self.itemClass = itemClass
        self.box = AttributesBox(attributes)
        self.data = data
        self.created = created
        self.modified = modified
        self.persistentID = persistentID
        self.generation = generation
    }

    /// How many bytes a persistent id has; a record that says otherwise is damaged.
    static let persistentIDByteCount = 16

    /// A new item's record at `now`, generation 1, with a new persistent id (16 random bytes).
    static func added(_ itemClass: ItemClass, attributes: ItemAttributes, data: Data, at now: Date) throws(VaultError)
        -> ItemRecord
    {
        let persistentID: Data
        do {
            persistentID = Data(try SecureRandom.bytes(count: persistentIDByteCount))
        } catch {
            throw VaultError(.notAvailable, "cannot make a persistent id: \(error.message)", cause: error)
        }
        return ItemRecord(
            itemClass: itemClass, attributes: attributes, data: data, created: now, modified: now,
            persistentID: persistentID, generation: 1)
    }

    /// Makes this the record's next generation, modified at `now` (never before its last change).
    mutating func advance(modifiedAt now: Date) {
        modified = max(now, modified)
        generation &+= 1
    }

    /// The same record with `data` as its secret, sharing the attributes.
    func with(data: Data) -> ItemRecord {
        var record = self
        record.data = data
        return record
    }

    /// The bytes this record owns beyond its inline size, for the caches' byte bounds
    /// (`BoundedCache`): the attribute box (counted whole even when shared) and the byte fields.
    var heapByteEstimate: Int {
        box.heapByteEstimate + HeapBytes.of(data) + HeapBytes.of(persistentID) + HeapBytes.of(client)
    }

    /// The current time as the archive will give it back: a date that went through the archive once
    /// comes back equal from every later read, so the dates an add or update returns are exactly the
    /// dates later reads return.
    static func now() -> Date {
        let date = Date()
        return ItemMetadataArchive.archived(date) ?? date
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
        primaryKey(itemClass, a, synchronizable: a.synchronizable ?? false)
    }

    /// `primaryKey` with the synchronizable flag given apart from `a`'s (a query holds it apart).
    static func primaryKey(_ itemClass: ItemClass, _ a: ItemAttributes, synchronizable: Bool) -> [UInt8] {
        // Appended in place into one buffer: every get computes this, and a temporary array per field
        // was a measurable part of it.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(96)
        func field(_ text: String) {
            bytes.appendBigEndian(UInt32(text.utf8.count))
            bytes.appendUTF8(of: text)
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
        field(synchronizable ? "1" : "0")
        return bytes
    }

    var primaryKey: [UInt8] { Self.primaryKey(itemClass, attributes) }

    /// The class key that encrypts the item's file.
    var protectionClass: ProtectionClass { attributes.accessible.protectionClass }

    /// The persistent id and generation, for the store's rollback check.
    var version: ItemVersion { ItemVersion(persistentID: [UInt8](persistentID), generation: generation) }
}

/// Coded as the synthesised conformance coded the stored fields before the attributes went into a box
/// (backups hold records): the same keys, in the same order. Who wrote a version (`client`, `writer`)
/// is history, which backups do not carry; left out, a backup stays readable by earlier builds.
extension ItemRecord: Codable {
    enum CodingKeys: String, CodingKey {
        case itemClass, attributes, data, created, modified, persistentID, generation
    }

    /// Refuses a persistent id that is not `persistentIDByteCount` bytes, and a generation at or above
    /// the store's bound (2^62), which the next write's would overflow: a record from a file, a backup
    /// or a peer is bounded before anything counts its bytes or adds to its numbers.
    static func checkBounds(persistentID: Data, generation: UInt64) throws(DecodingError) {
        guard persistentID.count == persistentIDByteCount else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: [],
                    debugDescription: "a persistent id of \(persistentID.count) bytes, not \(persistentIDByteCount)"))
        }
        guard generation < ItemHistory.maximumGeneration else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "generation \(generation), above what any write makes"))
        }
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let persistentID = try c.decode(Data.self, forKey: .persistentID)
        let generation = try c.decode(UInt64.self, forKey: .generation)
        try Self.checkBounds(persistentID: persistentID, generation: generation)
        self.init(
            itemClass: try c.decode(ItemClass.self, forKey: .itemClass),
            attributes: try c.decode(ItemAttributes.self, forKey: .attributes),
            data: try c.decode(Data.self, forKey: .data), created: try c.decode(Date.self, forKey: .created),
            modified: try c.decode(Date.self, forKey: .modified),
            persistentID: persistentID, generation: generation)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(itemClass, forKey: .itemClass)
        try c.encode(attributes, forKey: .attributes)
        try c.encode(data, forKey: .data)
        try c.encode(created, forKey: .created)
        try c.encode(modified, forKey: .modified)
        try c.encode(persistentID, forKey: .persistentID)
        try c.encode(generation, forKey: .generation)
    }
}

/// A record's attributes, shared by its copies. Most items hold only a service, an account and an
/// accessibility (what `Vault.set` and `vault put` store): those are kept in a few fields instead of a
/// whole `ItemAttributes` (280 bytes inline, nearly all of it empty optionals), so that a cache of
/// 100,000 scanned items holds 64 bytes of attributes each rather than 300.
final class AttributesBox: Sendable, StoredAttributes {
    let service: String?
    let account: String?
    let accessible: Accessibility?
    let synchronizable: Bool?
    /// Every attribute, when any other than those four is set.
    private let full: FullAttributes?

    init(_ value: ItemAttributes) {
        service = value.service
        account = value.account
        accessible = value.accessible
        synchronizable = value.synchronizable
        var rest = value
        rest.service = nil
        rest.account = nil
        rest.accessible = nil
        rest.synchronizable = nil
        full = rest == ItemAttributes() ? nil : FullAttributes(value)
    }

    var value: ItemAttributes {
        if let full { return full.value }
        var value = ItemAttributes()
        value.service = service
        value.account = account
        value.accessible = accessible
        value.synchronizable = synchronizable
        return value
    }

    // The other attributes, for `StoredAttributes`: set only in a full box.
    var label: String? { full?.value.label }
    var itemDescription: String? { full?.value.itemDescription }
    var comment: String? { full?.value.comment }
    var generic: Data? { full?.value.generic }
    var creator: UInt32? { full?.value.creator }
    var type: UInt32? { full?.value.type }
    var isInvisible: Bool? { full?.value.isInvisible }
    var isNegative: Bool? { full?.value.isNegative }
    var server: String? { full?.value.server }
    var securityDomain: String? { full?.value.securityDomain }
    var `protocol`: String? { full?.value.`protocol` }
    var authenticationType: String? { full?.value.authenticationType }
    var port: Int? { full?.value.port }
    var path: String? { full?.value.path }

    /// The box and what it owns, for the caches' byte bounds (`BoundedCache`).
    var heapByteEstimate: Int {
        if let full { return HeapBytes.object(48) + full.heapByteEstimate }
        return HeapBytes.object(48) + HeapBytes.of(service) + HeapBytes.of(account)
    }

    private final class FullAttributes: Sendable {
        let value: ItemAttributes

        init(_ value: ItemAttributes) { self.value = value }

        var heapByteEstimate: Int { HeapBytes.object(MemoryLayout<ItemAttributes>.stride) + value.heapByteEstimate }
    }
}
