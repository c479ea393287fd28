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

    /// The attributes of an item under their raw keys (`ItemAttribute`), as NSString, NSNumber, NSDate
    /// and NSData values; the primary-key attributes always (a missing one is "" or 0). An item stored
    /// without `kSecAttrAccessible` reports Apple's default, "ak".
    static func attributes(_ item: MatchedItem) -> [(String, AnyObject)] {
        let a = item.attributes
        let dataTyped = a.dataTypedKeys ?? []
        var result: [(String, AnyObject)] = []
        for attribute in ItemAttribute.attributes(of: item.itemClass) {
            let primary = attribute.isPrimaryKey(of: item.itemClass)
            let value: AnyObject?
            switch attribute.valueType {
            case .blob, .fourCharacterCode:
                // A blob attribute comes back in the type it was given in: NSData for bytes, NSString for text.
                value = (a[text: attribute] ?? (primary ? "" : nil)).map { text in
                    dataTyped.contains(attribute.key) ? NSData(data: Data(text.utf8)) : NSString(string: text)
                }
            case .data:
                value = a.generic.map { generic in
                    a.genericIsText == true
                        ? NSString(string: String(decoding: generic, as: UTF8.self)) : NSData(data: generic)
                }
            case .code: value = a[code: attribute].map { NSNumber(value: $0) }
            case .number: value = NSNumber(value: a.port ?? 0)
            case .flag: value = a[flag: attribute].map { NSNumber(value: $0) }
            case .date:
                value = a[date: attribute].map {
                    NSDate(timeIntervalSinceReferenceDate: $0.timeIntervalSinceReferenceDate)
                }
            case .accessibility: value = NSString(string: (a.accessible ?? .whenUnlocked).rawValue)
            case .accessGroup: value = a.accessGroup.map { NSString(string: $0.rawValue) }
            case .synchronizable: value = NSNumber(value: a.synchronizable ?? false)
            case .accessControl: value = nil
            }
            if let value { result.append((attribute.key, value)) }
        }
        return result
    }
}
