import FoundationEssentials

/// Which items a query matches, built with Swift types: a class, attribute filters (each non-nil
/// attribute must match exactly, case-sensitively), a group, the synchronizable rule, an optional
/// persistent reference, and a limit.
public struct Query: Sendable, Hashable {
    /// The class to match; nil matches both (allowed in the Swift API; the `Security` module requires
    /// `kSecClass` unless the query carries only a persistent reference).
    public var itemClass: ItemClass?
    /// Attribute filters. `accessGroup` restricts the search to one group (which the client must be
    /// entitled to); `synchronizable` is ignored here (see `synchronizable`).
    public var attributes: ItemAttributes
    /// Which synchronizable values match; Apple's default is non-synchronizable items only.
    public var synchronizable: SynchronizableMatch
    /// Match only the item with this reference.
    public var persistentReference: PersistentReference?
    /// How many matches to return.
    public var limit: MatchLimit

    /// A query; by default it matches one non-synchronizable item of any attributes.
    public init(
        itemClass: ItemClass?,
        attributes: ItemAttributes = ItemAttributes(),
        synchronizable: SynchronizableMatch = .no,
        persistentReference: PersistentReference? = nil,
        limit: MatchLimit = .one
    ) {
        self.itemClass = itemClass
        self.attributes = attributes
        self.synchronizable = synchronizable
        self.persistentReference = persistentReference
        self.limit = limit
    }

    /// A generic-password query by service and (optionally) account.
    public static func genericPassword(
        service: String? = nil, account: String? = nil, group: AccessGroup? = nil, limit: MatchLimit = .one
    ) -> Query {
        var attributes = ItemAttributes(service: service, account: account)
        attributes.accessGroup = group
        return Query(itemClass: .genericPassword, attributes: attributes, limit: limit)
    }

    /// The query's primary key when it names every primary-key attribute of its class, so that the
    /// item can be found by one file read per group instead of a scan.
    var fullPrimaryKey: [UInt8]? {
        guard let itemClass, persistentReference == nil, synchronizable != .any else { return nil }
        // Every primary-key attribute of the class but the synchronizable flag, which the query holds.
        let named = ItemAttribute.primaryKey(of: itemClass).allSatisfy { attribute in
            attribute == .synchronizable || attributes.hasValue(attribute)
        }
        return named ? ItemRecord.primaryKey(itemClass, attributes, synchronizable: synchronizable == .yes) : nil
    }

    /// Whether a stored record matches everything but the group.
    func matches(_ record: ItemRecord, group: AccessGroup) -> Bool {
        if let itemClass, record.itemClass != itemClass { return false }
        let synchronized = record.synchronizable ?? false
        switch synchronizable {
        case .yes: if !synchronized { return false }
        case .no: if synchronized { return false }
        case .any: break
        }
        if let persistentReference, persistentReference.persistentID != record.persistentID { return false }
        // The group and the synchronizable flag were matched above; `matches` ignores them.
        return record.attributesMatch(attributes)
    }
}

/// kSecAttrSynchronizable in a query: true, false (the default), or kSecAttrSynchronizableAny.
public enum SynchronizableMatch: Sendable, Hashable {
    /// Only synchronizable items.
    case yes
    /// Only non-synchronizable items (Apple's default when the key is missing).
    case no
    /// Both (kSecAttrSynchronizableAny).
    case any
}

/// kSecMatchLimit: one (the default), all, or at most n.
public enum MatchLimit: Sendable, Hashable {
    /// kSecMatchLimitOne.
    case one
    /// kSecMatchLimitAll.
    case all
    /// At most n items.
    case count(Int)

    var maximum: Int {
        switch self {
        case .one: return 1
        case .all: return Int.max
        case .count(let n): return max(0, n)
        }
    }
}

/// What a copy-matching returns for each item (Apple's `kSecReturn*` keys).
public struct ReturnOptions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: Int
    /// Wraps raw bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// kSecReturnData: the secret.
    public static let data = ReturnOptions(rawValue: 1)
    /// kSecReturnAttributes.
    public static let attributes = ReturnOptions(rawValue: 2)
    /// kSecReturnPersistentRef.
    public static let persistentReference = ReturnOptions(rawValue: 4)
    /// kSecReturnRef: for password items Apple returns the attributes; so does the vault.
    public static let reference = ReturnOptions(rawValue: 8)
}

/// One item found by a query.
public struct MatchedItem: Sendable {
    /// The item as found. Its record shares the attributes with the handle's caches: a query of every
    /// item of a large vault holds each item's attributes once, not once more per result
    /// (docs/PERFORMANCE.md, "Memory").
    let item: LocatedItem
    let returnsData: Bool

    init(_ item: LocatedItem, returning options: ReturnOptions) {
        self.item = item
        returnsData = options.contains(.data)
    }

    /// The item's class.
    public var itemClass: ItemClass { item.record.itemClass }
    /// Its attributes, with group, synchronizable flag and dates filled in.
    public var attributes: ItemAttributes { item.record.returnedAttributes(group: item.group) }
    /// The secret, when `ReturnOptions.data` was asked for.
    public var data: Data? { returnsData ? item.record.data : nil }
    /// The item's persistent reference.
    public var persistentReference: PersistentReference { item.persistentReference }
}

/// What an update changes: every non-nil attribute (moving the item to another group if
/// `accessGroup` is set), and the secret if `data` is set.
public struct ItemChanges: Sendable, Hashable {
    /// Attributes to set. The class, dates and persistent reference cannot change.
    public var attributes: ItemAttributes
    /// The new secret, if it changes.
    public var data: Data?

    /// Changes.
    public init(attributes: ItemAttributes = ItemAttributes(), data: Data? = nil) {
        self.attributes = attributes
        self.data = data
    }
}
