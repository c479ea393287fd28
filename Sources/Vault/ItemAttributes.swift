import FoundationEssentials
import VaultCrypto

/// The attributes of an item, named as Apple's `kSecAttr*` keys. In an add they describe the new item
/// (a missing service or account is ""); in a query each non-nil attribute must match exactly; in an
/// update each non-nil attribute is set. The vault fills in `accessGroup`, `synchronizable` and the
/// dates of the items it returns.
public struct ItemAttributes: Sendable, Hashable, Codable {
    /// kSecAttrService ("svce"), generic passwords.
    public var service: String?
    /// kSecAttrAccount ("acct").
    public var account: String?
    /// kSecAttrLabel ("labl").
    public var label: String?
    /// kSecAttrDescription ("desc").
    public var itemDescription: String?
    /// kSecAttrComment ("icmt").
    public var comment: String?
    /// kSecAttrGeneric ("gena"), generic passwords.
    public var generic: Data?
    /// kSecAttrCreator ("crtr"), a four-character code.
    public var creator: UInt32?
    /// kSecAttrType ("type"), a four-character code.
    public var type: UInt32?
    /// kSecAttrIsInvisible ("invi").
    public var isInvisible: Bool?
    /// kSecAttrIsNegative ("nega").
    public var isNegative: Bool?
    /// kSecAttrAccessible ("pdmn").
    public var accessible: Accessibility?
    /// kSecAttrAccessGroup ("agrp"): where the item lives.
    public var accessGroup: AccessGroup?
    /// kSecAttrSynchronizable ("sync"): part of the primary key; missing is false. In a query use
    /// `Query.synchronizable` instead.
    public var synchronizable: Bool?
    /// kSecAttrServer ("srvr"), internet passwords.
    public var server: String?
    /// kSecAttrSecurityDomain ("sdmn"), internet passwords.
    public var securityDomain: String?
    /// kSecAttrProtocol ("ptcl"): the raw value of a `kSecAttrProtocol*` constant, e.g. "htps".
    public var `protocol`: String?
    /// kSecAttrAuthenticationType ("atyp"): the raw value of a `kSecAttrAuthenticationType*` constant.
    public var authenticationType: String?
    /// kSecAttrPort ("port"), internet passwords.
    public var port: Int?
    /// kSecAttrPath ("path"), internet passwords.
    public var path: String?
    /// kSecAttrCreationDate ("cdat"): set by the vault.
    public var creationDate: Date?
    /// kSecAttrModificationDate ("mdat"): set by the vault.
    public var modificationDate: Date?
    /// The raw keys of the text attributes of blob type in Apple's schema (`acct`, `svce`, `labl`,
    /// `desc`, `icmt`, `srvr`, `sdmn`, `path`, `atyp`) that were given as bytes (`Data`) rather than
    /// text. Apple's keychain keeps the type such an attribute was given in and returns it so;
    /// matching compares the bytes either way. Nil: all given as text.
    public var dataTypedKeys: Set<String>?
    /// Whether `generic` (`gena`, bytes here) was given as text: then it is returned as text.
    public var genericIsText: Bool?

    /// No attributes.
    public init() {}

    /// Common attributes of a generic password.
    public init(service: String?, account: String?, label: String? = nil, comment: String? = nil) {
        self.service = service
        self.account = account
        self.label = label
        self.comment = comment
    }

    /// The name of the first attribute given here that `itemClass` does not have (`ItemAttribute`):
    /// the internet-only ones are not attributes of a generic password, `service` and `generic` not of
    /// an internet password.
    func unsupportedAttribute(for itemClass: ItemClass) -> String? {
        ItemAttribute.allCases.first { !$0.isAttribute(of: itemClass) && hasValue($0) }?.name
    }

    /// Whether every non-nil attribute of `self` (a filter) matches `item`. A missing service or
    /// account of a stored item is "" (Apple's rule); the synchronizable flag, the group and the
    /// dates are matched by the query itself.
    func matches(_ item: ItemAttributes) -> Bool {
        matches(item, created: item.creationDate, modified: item.modificationDate)
    }

    /// `matches` against a stored item's attributes and dates, without building its returned
    /// attributes (this runs for every item of a scan and every get): `item` is an `ItemAttributes`
    /// or a record's own box of them (`ItemRecord.attributesMatch`).
    func matches(_ item: some StoredAttributes, created: Date?, modified: Date?) -> Bool {
        // The stored value is an autoclosure, read only for an attribute the filter names: reading
        // every attribute (a retain and release of each text) was a measurable part of a get.
        func same<T: Equatable>(_ filter: T?, _ value: @autoclosure () -> T?) -> Bool {
            guard let filter else { return true }
            return filter == value()
        }
        // Text compares as bytes, as Apple's keychain compares attribute values (and as item ids hash
        // them): Swift's `==` on String is canonical equivalence, which would make "é" and "e\u{301}"
        // match each other while they name different items.
        func same(_ filter: String?, _ value: @autoclosure () -> String?) -> Bool {
            guard let filter else { return true }
            guard let value = value() else { return false }
            return filter.utf8.span.hasSameBytes(as: value.utf8.span)
        }
        return same(service, item.service ?? "") && same(account, item.account ?? "") && same(label, item.label)
            && same(itemDescription, item.itemDescription) && same(comment, item.comment)
            && same(generic, item.generic) && same(creator, item.creator) && same(type, item.type)
            && same(isInvisible, item.isInvisible) && same(isNegative, item.isNegative)
            && same(accessible, item.accessible) && same(server, item.server ?? "")
            && same(securityDomain, item.securityDomain ?? "") && same(`protocol`, item.`protocol` ?? "")
            && same(authenticationType, item.authenticationType ?? "") && same(port, item.port ?? 0)
            && same(path, item.path ?? "") && same(creationDate, created) && same(modificationDate, modified)
    }

    /// `self` with every non-nil attribute of `changes` applied (the group and dates excepted).
    func applying(_ changes: ItemAttributes) -> ItemAttributes {
        var result = self
        if let v = changes.service { result.service = v }
        if let v = changes.account { result.account = v }
        if let v = changes.label { result.label = v }
        if let v = changes.itemDescription { result.itemDescription = v }
        if let v = changes.comment { result.comment = v }
        if let v = changes.generic {
            result.generic = v
            result.genericIsText = changes.genericIsText
        }
        if let v = changes.creator { result.creator = v }
        if let v = changes.type { result.type = v }
        if let v = changes.isInvisible { result.isInvisible = v }
        if let v = changes.isNegative { result.isNegative = v }
        if let v = changes.accessible { result.accessible = v }
        if let v = changes.synchronizable { result.synchronizable = v }
        if let v = changes.server { result.server = v }
        if let v = changes.securityDomain { result.securityDomain = v }
        if let v = changes.`protocol` { result.`protocol` = v }
        if let v = changes.authenticationType { result.authenticationType = v }
        if let v = changes.port { result.port = v }
        if let v = changes.path { result.path = v }
        // Each blob attribute that changes takes the type it was given in this time.
        var changedBlobKeys: Set<String> = []
        for attribute in ItemAttribute.blobAttributes where changes.hasValue(attribute) {
            changedBlobKeys.insert(attribute.key)
        }
        if !changedBlobKeys.isEmpty {
            var typed = (result.dataTypedKeys ?? []).subtracting(changedBlobKeys)
            typed.formUnion((changes.dataTypedKeys ?? []).intersection(changedBlobKeys))
            result.dataTypedKeys = typed.isEmpty ? nil : typed
        }
        return result
    }

    /// The raw keys of the text attributes that Apple's schema types as blobs (text or bytes, kept as
    /// given): `ItemAttribute.blobKeys`.
    public static var blobKeys: Set<String> { ItemAttribute.blobKeys }
}

/// The attributes of a stored item, as `ItemAttributes.matches` reads them.
protocol StoredAttributes {
    var service: String? { get }
    var account: String? { get }
    var label: String? { get }
    var itemDescription: String? { get }
    var comment: String? { get }
    var generic: Data? { get }
    var creator: UInt32? { get }
    var type: UInt32? { get }
    var isInvisible: Bool? { get }
    var isNegative: Bool? { get }
    var accessible: Accessibility? { get }
    var server: String? { get }
    var securityDomain: String? { get }
    var `protocol`: String? { get }
    var authenticationType: String? { get }
    var port: Int? { get }
    var path: String? { get }
}

extension ItemAttributes: StoredAttributes {}

extension ItemAttributes {
    /// The longest text attribute (service, account, label, server, path and the others), in UTF-8
    /// bytes: names are for people and programs to type, and every message may name them.
    public static let maximumTextLength = ItemKey.maximumLength

    /// Refuses (`param`) a text attribute longer than `maximumTextLength`, naming it and its length.
    func requireTextWithinLimits() throws(VaultError) {
        let texts: [(String, String?)] = [
            ("service", service), ("account", account), ("label", label), ("description", itemDescription),
            ("comment", comment), ("server", server), ("security domain", securityDomain), ("protocol", `protocol`),
            ("authentication type", authenticationType), ("path", path),
        ]
        for (name, value) in texts {
            guard let count = value?.utf8.count, count > Self.maximumTextLength else { continue }
            throw VaultError(
                .param,
                "the \(name) is \(count) bytes; at most \(Self.maximumTextLength) are allowed in a name or label "
                    + "(nothing was stored)")
        }
    }
}
