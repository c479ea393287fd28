import FoundationEssentials
import Vault

/// How a Secret Service item is a vault item (docs/SECRET-SERVICE.md): a generic password of the
/// collection's group whose service is the attribute `service` (else `xdg:schema`, else
/// `secret-service`), whose account is the whole attribute map in one canonical text (so that items
/// with the same attributes are the same item, as `CreateItem`'s `replace` wants), whose label is the
/// item's label, and whose creator is `ssvc`. An item that vault's own faces wrote shows as the
/// attributes `service` and `account`.
struct SecretItemMapping {
    /// The creator code of the items made through the Secret Service ("ssvc").
    static let creator: UInt32 = 0x7373_7663
    static let fallbackService = "secret-service"

    /// The canonical text of `attributes`: `key=value` pairs sorted by key, joined by `&`, with `%`,
    /// `&` and `=` written as `%25`, `%26` and `%3D`.
    static func canonicalText(_ attributes: [String: String]) -> String {
        attributes.sorted { $0.key < $1.key }.map { escape($0.key) + "=" + escape($0.value) }.joined(separator: "&")
    }

    /// The attribute map `text` spells; nil when it is no canonical text.
    static func attributes(fromCanonicalText text: String) -> [String: String]? {
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
            default: return nil
            }
            rest = rest[index...].dropFirst(3)
        }
        return result + rest
    }

    /// The vault attributes of an item made through the Secret Service in `group`.
    static func vaultAttributes(_ attributes: [String: String], label: String, group: AccessGroup)
        throws(ServiceError) -> ItemAttributes
    {
        let account = canonicalText(attributes)
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
        result.accessGroup = group
        return result
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
