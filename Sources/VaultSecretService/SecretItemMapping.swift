import FoundationEssentials
import Vault

/// How a Secret Service item is a vault item (docs/SECRET-SERVICE.md): a generic password of the
/// collection's group whose service is the attribute `service` (else `xdg:schema`, else
/// `secret-service`), whose account is the whole attribute map in one canonical text (`#2`, `#3`, …
/// after it for the second and later items of the same attributes that `CreateItem` made without
/// `replace`), whose label is the item's label, whose description is the secret's content type, and
/// whose creator is `ssvc`. An item that vault's own faces wrote shows as the attributes `service` and
/// `account`, its secret as `text/plain`.
struct SecretItemMapping {
    /// The creator code of the items made through the Secret Service ("ssvc").
    static let creator: UInt32 = 0x7373_7663
    static let fallbackService = "secret-service"

    static let defaultContentType = "text/plain"

    /// The canonical text of `attributes`: `key=value` pairs sorted by key, joined by `&`, with `%`,
    /// `&`, `=` and `#` written as `%25`, `%26`, `%3D` and `%23`; for the `copy`th item of those
    /// attributes (from 2), `#` and the number after it.
    static func canonicalText(_ attributes: [String: String], copy: Int = 1) -> String {
        let text = attributes.sorted { $0.key < $1.key }.map { escape($0.key) + "=" + escape($0.value) }
            .joined(separator: "&")
        return copy > 1 ? text + "#\(copy)" : text
    }

    /// The attribute map `text` spells; nil when it is no canonical text.
    static func attributes(fromCanonicalText whole: String) -> [String: String]? {
        var text = whole[...]
        if let mark = whole.lastIndex(of: "#") {
            guard let copy = Int(whole[whole.index(after: mark)...]), copy > 1 else { return nil }
            text = whole[..<mark]
            guard canonicalText([:], copy: copy) == whole[mark...] else { return nil }
        }
        guard !text.isEmpty else { return [:] }
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: false) {
            let parts = pair.split(separator: "=", omittingEmptySubsequences: false)
            guard parts.count == 2, let key = unescape(parts[0]), let value = unescape(parts[1]) else { return nil }
            result[key] = value
        }
        return canonicalText(result) == text ? result : nil
    }

    private static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "%": escaped += "%25"
            case "&": escaped += "%26"
            case "=": escaped += "%3D"
            case "#": escaped += "%23"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private static func unescape(_ text: Substring) -> String? {
        var result = ""
        var rest = text[...]
        while let index = rest.firstIndex(of: "%") {
            result += rest[..<index]
            let code = rest[index...].prefix(3)
            switch code {
            case "%25": result += "%"
            case "%26": result += "&"
            case "%3D": result += "="
            case "%23": result += "#"
            default: return nil
            }
            rest = rest[index...].dropFirst(3)
        }
        return result + rest
    }

    /// The vault attributes of an item made through the Secret Service in `group`: the `copy`th of
    /// those attributes, its secret of `contentType`.
    static func vaultAttributes(
        _ attributes: [String: String], label: String, group: AccessGroup, copy: Int = 1,
        contentType: String = defaultContentType
    ) throws(ServiceError) -> ItemAttributes {
        // Exactly `service` and `account`: the item `vault put SERVICE ACCOUNT` names, so that a client
        // storing those replaces it rather than making another.
        if copy == 1, Set(attributes.keys) == ["service", "account"], let service = attributes["service"],
            let account = attributes["account"], !service.isEmpty
        {
            var result = ItemAttributes(service: service, account: account, label: label)
            result.accessGroup = group
            return result
        }
        let account = canonicalText(attributes, copy: copy)
        guard account.utf8.count <= ItemKey.maximumLength else {
            throw ServiceError(
                .failed,
                "the item's attributes take \(account.utf8.count) bytes; a vault item's attributes take at most "
                    + "\(ItemKey.maximumLength)")
        }
        var result = ItemAttributes(
            service: attributes["service"] ?? attributes["xdg:schema"] ?? fallbackService, account: account,
            label: label)
        result.creator = creator
        result.itemDescription = contentType
        result.accessGroup = group
        return result
    }

    /// The content type of the secret of vault item `attributes`.
    static func contentType(_ attributes: ItemAttributes) -> String {
        attributes.creator == creator ? attributes.itemDescription ?? defaultContentType : defaultContentType
    }

    /// The Secret Service attributes of vault item `attributes`.
    static func secretServiceAttributes(_ attributes: ItemAttributes) -> [String: String] {
        if attributes.creator == creator, let account = attributes.account,
            let map = Self.attributes(fromCanonicalText: account)
        {
            return map
        }
        var map: [String: String] = [:]
        map["service"] = attributes.service ?? ""
        map["account"] = attributes.account ?? ""
        return map
    }

    /// The label a client sees: the item's label, else `service/account` (a vault face wrote it).
    static func label(_ attributes: ItemAttributes) -> String {
        if let label = attributes.label { return label }
        return [attributes.service, attributes.account].compactMap(\.self).joined(separator: "/")
    }

    /// Whether the Secret Service attributes `wanted` are all among `attributes`' (a search).
    static func matches(_ wanted: [String: String], _ attributes: [String: String]) -> Bool {
        wanted.allSatisfy { attributes[$0.key] == $0.value }
    }
}
