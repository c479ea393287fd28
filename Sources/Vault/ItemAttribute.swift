import FoundationEssentials

/// The attributes of the password classes, written once (Apple's genp and inet schemas): each one's
/// raw key (the value of its `kSecAttr*` constant), the classes that have it, the type of its value,
/// and whether it is part of the primary key. `Vault` refuses an attribute that a class lacks by it,
/// `Security` reads and writes SecItem dictionaries by it, the C API lists items by it.
public enum ItemAttribute: String, CaseIterable, Sendable, Hashable {
    /// kSecAttrAccessible.
    case accessible = "pdmn"
    /// kSecAttrAccessGroup.
    case accessGroup = "agrp"
    /// kSecAttrCreationDate.
    case creationDate = "cdat"
    /// kSecAttrModificationDate.
    case modificationDate = "mdat"
    /// kSecAttrDescription.
    case itemDescription = "desc"
    /// kSecAttrComment.
    case comment = "icmt"
    /// kSecAttrCreator.
    case creator = "crtr"
    /// kSecAttrType.
    case type = "type"
    /// kSecAttrLabel.
    case label = "labl"
    /// kSecAttrIsInvisible.
    case isInvisible = "invi"
    /// kSecAttrIsNegative.
    case isNegative = "nega"
    /// kSecAttrAccount.
    case account = "acct"
    /// kSecAttrSynchronizable.
    case synchronizable = "sync"
    /// kSecAttrAccessControl (kept as the accessibility it names).
    case accessControl = "accc"
    /// kSecAttrService (generic passwords).
    case service = "svce"
    /// kSecAttrGeneric (generic passwords).
    case generic = "gena"
    /// kSecAttrServer (internet passwords).
    case server = "srvr"
    /// kSecAttrSecurityDomain (internet passwords).
    case securityDomain = "sdmn"
    /// kSecAttrProtocol (internet passwords).
    case `protocol` = "ptcl"
    /// kSecAttrAuthenticationType (internet passwords).
    case authenticationType = "atyp"
    /// kSecAttrPort (internet passwords).
    case port = "port"
    /// kSecAttrPath (internet passwords).
    case path = "path"

    /// The type of an attribute's value.
    public enum ValueType: Sendable, Hashable {
        /// Text that may be given as bytes (a blob in Apple's schema), returned in the type it was given.
        case blob
        /// A protocol: text, or a four-character code given as a number.
        case fourCharacterCode
        /// Bytes, or text returned as text (`gena`).
        case data
        /// A 32-bit code (`crtr`, `type`).
        case code
        /// A number (`port`).
        case number
        /// A Boolean (`invi`, `nega`).
        case flag
        /// A date, set by the vault.
        case date
        /// A `kSecAttrAccessible*` value.
        case accessibility
        /// An access group's name.
        case accessGroup
        /// A Boolean, or `kSecAttrSynchronizableAny` in a query.
        case synchronizable
        /// A `SecAccessControl`.
        case accessControl
    }

    /// The raw key, e.g. "acct".
    public var key: String { rawValue }

    /// The name of the `ItemAttributes` property, for messages.
    public var name: String { String(describing: self) }

    /// The type of the attribute's value.
    public var valueType: ValueType {
        switch self {
        case .account, .service, .label, .itemDescription, .comment, .server, .securityDomain, .path,
            .authenticationType:
            return .blob
        case .protocol: return .fourCharacterCode
        case .generic: return .data
        case .creator, .type: return .code
        case .port: return .number
        case .isInvisible, .isNegative: return .flag
        case .creationDate, .modificationDate: return .date
        case .accessible: return .accessibility
        case .accessGroup: return .accessGroup
        case .synchronizable: return .synchronizable
        case .accessControl: return .accessControl
        }
    }

    /// The classes that have the attribute.
    public var classes: Set<ItemClass> { Set(ItemClass.allCases.filter(isAttribute(of:))) }

    /// Whether `itemClass` has the attribute.
    public func isAttribute(of itemClass: ItemClass) -> Bool {
        switch self {
        case .service, .generic: itemClass == .genericPassword
        case .server, .securityDomain, .protocol, .authenticationType, .port, .path: itemClass == .internetPassword
        // Every class has the others: a new class must say so here.
        default:
            switch itemClass {
            case .genericPassword, .internetPassword: true
            }
        }
    }

    /// Whether the attribute is part of the primary key of `itemClass` (the access group aside: it
    /// selects the directory). A missing one is "" (0 for the port, false for the synchronizable flag).
    public func isPrimaryKey(of itemClass: ItemClass) -> Bool {
        switch (self, itemClass) {
        case (.account, _), (.synchronizable, _): return true
        case (.service, .genericPassword): return true
        case (.server, .internetPassword), (.securityDomain, .internetPassword), (.protocol, .internetPassword),
            (.authenticationType, .internetPassword), (.port, .internetPassword), (.path, .internetPassword):
            return true
        default: return false
        }
    }

    /// The attributes of `itemClass`, in schema order.
    public static func attributes(of itemClass: ItemClass) -> [ItemAttribute] {
        itemClass == .genericPassword ? genericPassword : internetPassword
    }

    /// The primary-key attributes of `itemClass`, in schema order.
    public static func primaryKey(of itemClass: ItemClass) -> [ItemAttribute] {
        itemClass == .genericPassword ? genericPrimaryKey : internetPrimaryKey
    }

    // From `isAttribute(of:)`, not `classes`: a set for each attribute was most of a `vault get`'s first
    // look-up by primary key.
    private static let genericPassword = allCases.filter { $0.isAttribute(of: .genericPassword) }
    private static let internetPassword = allCases.filter { $0.isAttribute(of: .internetPassword) }
    private static let genericPrimaryKey = genericPassword.filter { $0.isPrimaryKey(of: .genericPassword) }
    private static let internetPrimaryKey = internetPassword.filter { $0.isPrimaryKey(of: .internetPassword) }

    /// The blob attributes (text or bytes, kept as given), in schema order.
    static let blobAttributes = allCases.filter { $0.valueType == .blob }

    /// The raw keys of the blob attributes (text or bytes, kept as given).
    public static let blobKeys: Set<String> = Set(blobAttributes.map(\.key))
}

extension ItemAttributes {
    /// Whether `attribute` has a value here (never for `accessControl`, which is kept as `accessible`).
    public func hasValue(_ attribute: ItemAttribute) -> Bool {
        switch attribute.valueType {
        case .blob, .fourCharacterCode: return self[text: attribute] != nil
        case .data: return generic != nil
        case .code: return self[code: attribute] != nil
        case .number: return port != nil
        case .flag: return self[flag: attribute] != nil
        case .date: return self[date: attribute] != nil
        case .accessibility: return accessible != nil
        case .accessGroup: return accessGroup != nil
        case .synchronizable: return synchronizable != nil
        case .accessControl: return false
        }
    }

    /// The value of a text attribute (a blob, or the protocol); nil for any other.
    public subscript(text attribute: ItemAttribute) -> String? {
        get {
            switch attribute {
            case .account: return account
            case .service: return service
            case .label: return label
            case .itemDescription: return itemDescription
            case .comment: return comment
            case .server: return server
            case .securityDomain: return securityDomain
            case .path: return path
            case .authenticationType: return authenticationType
            case .protocol: return `protocol`
            default: return nil
            }
        }
        set {
            switch attribute {
            case .account: account = newValue
            case .service: service = newValue
            case .label: label = newValue
            case .itemDescription: itemDescription = newValue
            case .comment: comment = newValue
            case .server: server = newValue
            case .securityDomain: securityDomain = newValue
            case .path: path = newValue
            case .authenticationType: authenticationType = newValue
            case .protocol: `protocol` = newValue
            default: preconditionFailure("\(attribute) is not a text attribute")
            }
        }
    }

    /// The value of a code attribute (`creator`, `type`).
    public subscript(code attribute: ItemAttribute) -> UInt32? {
        get { attribute == .creator ? creator : attribute == .type ? type : nil }
        set {
            precondition(attribute.valueType == .code, "\(attribute) is not a code attribute")
            if attribute == .creator { creator = newValue } else { type = newValue }
        }
    }

    /// The value of a flag attribute (`isInvisible`, `isNegative`).
    public subscript(flag attribute: ItemAttribute) -> Bool? {
        get { attribute == .isInvisible ? isInvisible : attribute == .isNegative ? isNegative : nil }
        set {
            precondition(attribute.valueType == .flag, "\(attribute) is not a flag attribute")
            if attribute == .isInvisible { isInvisible = newValue } else { isNegative = newValue }
        }
    }

    /// The value of a date attribute (`creationDate`, `modificationDate`).
    public subscript(date attribute: ItemAttribute) -> Date? {
        get { attribute == .creationDate ? creationDate : attribute == .modificationDate ? modificationDate : nil }
        set {
            precondition(attribute.valueType == .date, "\(attribute) is not a date attribute")
            if attribute == .creationDate { creationDate = newValue } else { modificationDate = newValue }
        }
    }
}
