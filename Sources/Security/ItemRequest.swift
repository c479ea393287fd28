import Foundation
import Vault

/// A failure of a SecItem call: the status it returns and a sentence for debugging (never a secret).
struct SecStatusError: Error {
    let status: OSStatus
    let message: String

    init(_ status: OSStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: VaultError) {
        self.init(error.status.rawValue, error.message)
    }
}

/// A SecItem dictionary read into vault terms, with Apple's parameter checks (Apple's open-source
/// SecItemServer query parser is the reference): four-character keys are attributes of the class
/// (`errSecNoSuchAttr` for any other), `m_`, `r_`, `u_` and `v_` keys are search, return, use and
/// value keys; a wrong value type is `errSecParam`.
struct ItemRequest {
    var itemClass: ItemClass?
    var attributes = ItemAttributes()
    /// kSecAttrSynchronizable as given; nil when missing.
    var synchronizable: SynchronizableMatch?
    var persistentReference: PersistentReference?
    /// kSecMatchLimit as given; nil when missing.
    var limit: MatchLimit?
    /// The `m_` keys given (Apple refuses them in add and delete).
    var searchKeys: Set<String> = []
    /// Whether any `m_` key was given.
    var hasSearchKeys: Bool { !searchKeys.isEmpty }
    var returning: ReturnOptions = []
    /// kSecValueData as given.
    var data: Data?
    /// The attribute keys given (to refuse a persistent reference combined with attributes in delete).
    var attributeKeys: [String] = []
    var accessControl: SecAccessControl?

    /// The attribute keys of each class that the vault stores (`ItemAttribute`: Apple's genp and inet
    /// schemas).
    static let genericAttributes = Set(ItemAttribute.attributes(of: .genericPassword).map(\.key))
    static let internetAttributes = Set(ItemAttribute.attributes(of: .internetPassword).map(\.key))
    /// Keys Apple accepts that mean nothing here.
    static let ignoredAttributes: Set<String> = ["nleg", "vwht"]
    static let ignoredUseKeys: Set<String> = [
        "u_OpPrompt", "u_NoAuthUI", "u_AuthUI", "u_AuthCtx", "u_CredRef", "u_CallerName", "u_Tomb",
        "u_SystemKeychain", "u_SyncBubbleKeychain", "u_TokenRawItems", "u_CertWithIssuers",
    ]

    /// Reads `dictionary`, a query or the attributes of an add. The class must be given, unless the
    /// dictionary carries a persistent reference; certificates, keys and identities are
    /// `errSecUnimplemented`.
    init(query dictionary: CFDictionary) throws(SecStatusError) {
        let entries = try Self.entries(of: dictionary)
        let classValue = entries.first { $0.key == "class" }?.value
        if let classValue {
            guard let name = Self.string(classValue) else {
                throw SecStatusError(errSecParam, "kSecClass is not a string")
            }
            itemClass = try Self.itemClass(named: name)
        } else if !entries.contains(where: { $0.key == "v_PersistentRef" }) {
            throw SecStatusError(errSecParam, "the dictionary has no kSecClass")
        }
        for (key, value) in entries {
            switch key {
            case "class":
                continue
            case _ where key.utf8.count == 4:
                try setAttribute(key, value)
            case _ where key.hasPrefix("m_"):
                try setSearchKey(key, value)
            case _ where key.hasPrefix("r_"):
                try setReturnKey(key, value)
            case _ where key.hasPrefix("u_"):
                guard Self.ignoredUseKeys.contains(key) else {
                    throw SecStatusError(errSecParam, "\(key) is not a supported kSecUse key")
                }
            case "v_Data":
                guard let data = Self.data(value) else {
                    throw SecStatusError(errSecParam, "kSecValueData is not data")
                }
                self.data = data
            case "v_PersistentRef":
                guard let bytes = Self.data(value) else {
                    throw SecStatusError(errSecParam, "kSecValuePersistentRef is not data")
                }
                do {
                    persistentReference = try PersistentReference(bytes)
                } catch {
                    throw SecStatusError(error)
                }
            case "v_Ref":
                throw SecStatusError(errSecParam, "kSecValueRef is not supported for password items")
            default:
                throw SecStatusError(errSecParam, "\(key) is not a SecItem key")
            }
        }
        try applyAccessControl()
    }

    /// Reads the attributes-to-update dictionary of `SecItemUpdate`: attributes of `itemClass` (any
    /// password class when nil) and `kSecValueData`; every other key is `errSecNoSuchAttr`.
    init(changes dictionary: CFDictionary, itemClass: ItemClass?) throws(SecStatusError) {
        self.itemClass = itemClass
        for (key, value) in try Self.entries(of: dictionary) {
            if key == "v_Data" {
                guard let data = Self.data(value) else {
                    throw SecStatusError(errSecParam, "kSecValueData is not data")
                }
                self.data = data
            } else {
                try setAttribute(key, value)
            }
        }
        if synchronizable == .any {
            throw SecStatusError(errSecParam, "kSecAttrSynchronizableAny is not a value to update to")
        }
        try applyAccessControl()
    }

    /// The vault query: Apple's defaults are limit one and non-synchronizable items only, except that
    /// a persistent reference finds its item whatever its synchronizable flag.
    var query: Query {
        Query(
            itemClass: itemClass, attributes: attributes,
            synchronizable: synchronizable ?? (persistentReference == nil ? .no : .any),
            persistentReference: persistentReference, limit: limit ?? .one)
    }

    /// The attributes of a new item, with the synchronizable flag and, as Apple's server does, the
    /// protection class `kSecAttrAccessibleWhenUnlocked` when none is given.
    var addAttributes: ItemAttributes {
        var result = attributes
        result.synchronizable = synchronizable == .yes ? true : nil
        if result.accessible == nil { result.accessible = .whenUnlocked }
        return result
    }

    // MARK: Keys

    private static func entries(of dictionary: CFDictionary) throws(SecStatusError) -> [(key: String, value: Any)] {
        var result: [(key: String, value: Any)] = []
        for (key, value) in dictionary {
            guard let name = string(key) else { throw SecStatusError(errSecParam, "a dictionary key is not a string") }
            result.append((name, value))
        }
        return result
    }

    private static func itemClass(named name: String) throws(SecStatusError) -> ItemClass {
        if let itemClass = ItemClass(rawValue: name) { return itemClass }
        switch name {
        case "cert", "keys", "idnt":
            throw SecStatusError(
                errSecUnimplemented,
                "class \(name) (certificates, keys, identities) is not implemented; only genp and inet are")
        default:
            throw SecStatusError(errSecNoSuchClass, "\(name) is not an item class")
        }
    }

    private mutating func setSearchKey(_ key: String, _ value: Any) throws(SecStatusError) {
        searchKeys.insert(key)
        switch key {
        case "m_Limit":
            if let name = Self.string(value) {
                switch name {
                case "m_LimitOne": limit = .one
                case "m_LimitAll": limit = .all
                default: throw SecStatusError(errSecParam, "\(name) is not a kSecMatchLimit value")
                }
            } else if let n = Self.integer(value), n >= 1 {
                limit = n == 1 ? .one : .count(n)
            } else {
                throw SecStatusError(
                    errSecParam, "kSecMatchLimit is neither a kSecMatchLimit value nor a positive number")
            }
        case "m_CaseInsensitive":
            if Self.bool(value) == true {
                throw SecStatusError(
                    errSecUnimplemented, "kSecMatchCaseInsensitive is not implemented: matching is exact")
            }
        default:
            // Apple records other search keys (policies, issuers, …) and password searches ignore them.
            break
        }
    }

    private mutating func setReturnKey(_ key: String, _ value: Any) throws(SecStatusError) {
        let option: ReturnOptions
        switch key {
        case "r_Data": option = .data
        case "r_Attributes": option = .attributes
        case "r_Ref": option = .reference
        case "r_PersistentRef": option = .persistentReference
        default: throw SecStatusError(errSecParam, "\(key) is not a kSecReturn key")
        }
        guard let on = Self.bool(value) else { throw SecStatusError(errSecParam, "\(key) is not a Boolean") }
        if on { returning.insert(option) } else { returning.remove(option) }
    }

    private mutating func setAttribute(_ key: String, _ value: Any) throws(SecStatusError) {
        if Self.ignoredAttributes.contains(key) { return }
        let known: Set<String>
        switch itemClass {
        case .genericPassword: known = Self.genericAttributes
        case .internetPassword: known = Self.internetAttributes
        case nil: known = Self.genericAttributes.union(Self.internetAttributes)
        }
        guard known.contains(key), let attribute = ItemAttribute(rawValue: key) else {
            throw SecStatusError(
                errSecNoSuchAttr, "\(key) is not an attribute of class \(itemClass?.rawValue ?? "genp or inet")")
        }
        attributeKeys.append(key)
        func invalid(_ kind: String) -> SecStatusError {
            SecStatusError(errSecParam, "the value of attribute \(key) is not \(kind)")
        }
        switch attribute.valueType {
        case .blob:
            // Blob attributes in Apple's schema: text or bytes, returned in the type they were given.
            if let string = Self.string(value) {
                attributes[text: attribute] = string
                markType(of: key, asData: false)
            } else if let data = Self.data(value) {
                guard let decoded = String(validating: data, as: UTF8.self) else {
                    throw SecStatusError(
                        errSecParam,
                        "the value of attribute \(key) is bytes that are not UTF-8, which vault cannot keep")
                }
                attributes[text: attribute] = decoded
                markType(of: key, asData: true)
            } else {
                throw invalid("a string or data")
            }
        case .fourCharacterCode:
            if let text = Self.string(value) {
                attributes[text: attribute] = text
            } else if let code = Self.integer(value), let fourCC = Self.fourCharacterCode(code) {
                attributes[text: attribute] = fourCC
            } else {
                throw invalid("a kSecAttrProtocol value")
            }
        case .data:
            if let data = Self.data(value) {
                attributes.generic = data
                attributes.genericIsText = nil
            } else if let text = Self.string(value) {
                attributes.generic = Data(text.utf8)
                attributes.genericIsText = true
            } else {
                throw invalid("data or a string")
            }
        case .code:
            guard let n = Self.integer(value), let code = UInt32(exactly: n) else { throw invalid("a 32-bit code") }
            attributes[code: attribute] = code
        case .number:
            guard let n = Self.integer(value) else { throw invalid("a number") }
            attributes.port = n
        case .flag:
            guard let flag = Self.bool(value) else { throw invalid("a Boolean") }
            attributes[flag: attribute] = flag
        case .date:
            guard let date = value as? Date else { throw invalid("a date") }
            attributes[date: attribute] = date
        case .accessibility:
            guard let name = Self.string(value), let accessibility = Accessibility(rawValue: name) else {
                throw invalid("a kSecAttrAccessible value")
            }
            attributes.accessible = accessibility
        case .accessGroup:
            guard let name = Self.string(value) else { throw invalid("a string") }
            do {
                attributes.accessGroup = try AccessGroup(name)
            } catch {
                throw SecStatusError(error)
            }
        case .synchronizable:
            if Self.string(value) == "syna" {
                synchronizable = .any
            } else if let flag = Self.bool(value) {
                synchronizable = flag ? .yes : .no
            } else {
                throw invalid("a Boolean or kSecAttrSynchronizableAny")
            }
        case .accessControl:
            guard let control = value as? SecAccessControl else { throw invalid("a SecAccessControl") }
            accessControl = control
        }
    }

    /// Records whether blob attribute `key` came as bytes, so that results give it back so.
    private mutating func markType(of key: String, asData: Bool) {
        var typed = attributes.dataTypedKeys ?? []
        if asData { typed.insert(key) } else { typed.remove(key) }
        attributes.dataTypedKeys = typed.isEmpty ? nil : typed
    }

    /// kSecAttrAccessControl sets kSecAttrAccessible; both with different classes is `errSecParam`.
    private mutating func applyAccessControl() throws(SecStatusError) {
        guard let accessControl else { return }
        if let accessible = attributes.accessible, accessible != accessControl.protection {
            throw SecStatusError(errSecParam, "kSecAttrAccessible and kSecAttrAccessControl disagree")
        }
        attributes.accessible = accessControl.protection
    }

    // MARK: Values (as Foundation bridges them on Linux: Swift values or NS objects)

    static func string(_ value: Any) -> String? {
        value as? String
    }

    static func data(_ value: Any) -> Data? {
        value as? Data
    }

    static func bool(_ value: Any) -> Bool? {
        if let flag = value as? Bool { return flag }
        if value is String { return nil }
        if let number = value as? NSNumber { return number.boolValue }
        return nil
    }

    static func integer(_ value: Any) -> Int? {
        if let n = value as? Int { return n }
        if let number = value as? NSNumber {
            let n = number.intValue
            return NSNumber(value: n) == number ? n : nil
        }
        return nil
    }

    /// A four-character code as its text, e.g. 0x68747073 as "htps".
    static func fourCharacterCode(_ code: Int) -> String? {
        guard let n = UInt32(exactly: code) else { return nil }
        let bytes = [UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)]
        return String(bytes: bytes, encoding: .ascii)
    }
}
