import Foundation
import Vault

/// Results as Apple's SecItem functions return them (Apple's SecItemServer `SecDbItemCopyResult` is the
/// reference): the secret alone is `NSData`, the persistent reference alone is `NSData`, anything else
/// is an `NSDictionary` with raw attribute keys; several items are an `NSArray` of those.
enum ItemResult {
    /// The result object of one item. `data` is the secret when it was read or just written.
    static func object(_ item: MatchedItem, data: Data?, returning: ReturnOptions) -> AnyObject {
        if returning == .data {
            return NSData(data: data ?? Data())
        }
        if returning == .persistentReference {
            return NSData(data: item.persistentReference.rawValue)
        }
        let result = NSMutableDictionary()
        // kSecReturnRef on a password item gives its class, attributes and secret.
        if returning.contains(.reference) {
            result.setObject(NSString(string: item.itemClass.rawValue), forKey: kSecClass)
        }
        if returning.contains(.attributes) || returning.contains(.reference) {
            for (key, value) in attributes(item) {
                result.setObject(value, forKey: NSString(string: key))
            }
        }
        if returning.contains(.data) || returning.contains(.reference) {
            result.setObject(NSData(data: data ?? Data()), forKey: kSecValueData)
        }
        if returning.contains(.persistentReference) {
            result.setObject(NSData(data: item.persistentReference.rawValue), forKey: kSecValuePersistentRef)
        }
        return result
    }

    /// The attributes of an item under their raw keys, as NSString, NSNumber, NSDate and NSData values.
    /// An item stored without `kSecAttrAccessible` reports Apple's default, "ak".
    static func attributes(_ item: MatchedItem) -> [(String, AnyObject)] {
        let a = item.attributes
        var result: [(String, AnyObject)] = []
        let dataTyped = a.dataTypedKeys ?? []
        // A blob attribute comes back in the type it was given in: NSData for bytes, NSString for text.
        func text(_ key: String, _ value: String?) {
            guard let value else { return }
            result.append((key, dataTyped.contains(key) ? NSData(data: Data(value.utf8)) : NSString(string: value)))
        }
        func number(_ key: String, _ value: NSNumber?) {
            if let value { result.append((key, value)) }
        }
        text("acct", a.account ?? "")
        if item.itemClass == .genericPassword {
            text("svce", a.service ?? "")
            if let generic = a.generic {
                let value: AnyObject =
                    a.genericIsText == true
                    ? NSString(string: String(decoding: generic, as: UTF8.self)) : NSData(data: generic)
                result.append(("gena", value))
            }
        } else {
            text("srvr", a.server ?? "")
            text("sdmn", a.securityDomain ?? "")
            text("ptcl", a.protocol ?? "")
            text("atyp", a.authenticationType ?? "")
            number("port", NSNumber(value: a.port ?? 0))
            text("path", a.path ?? "")
        }
        text("agrp", a.accessGroup?.rawValue)
        text("pdmn", (a.accessible ?? .whenUnlocked).rawValue)
        number("sync", NSNumber(value: a.synchronizable ?? false))
        text("labl", a.label)
        text("desc", a.itemDescription)
        text("icmt", a.comment)
        number("crtr", a.creator.map { NSNumber(value: $0) })
        number("type", a.type.map { NSNumber(value: $0) })
        number("invi", a.isInvisible.map { NSNumber(value: $0) })
        number("nega", a.isNegative.map { NSNumber(value: $0) })
        if let created = a.creationDate {
            result.append(("cdat", NSDate(timeIntervalSinceReferenceDate: created.timeIntervalSinceReferenceDate)))
        }
        if let modified = a.modificationDate {
            result.append(("mdat", NSDate(timeIntervalSinceReferenceDate: modified.timeIntervalSinceReferenceDate)))
        }
        return result
    }
}
