import Foundation

// Core Foundation names as Apple's Security API uses them, as aliases of the Foundation classes that
// bridge on Linux, so that `[String: Any] as CFDictionary`, `kSecClass as String`, `var result:
// CFTypeRef?` and `(result as! CFData) as Data` compile and behave as on Apple platforms.

/// Apple's `CFTypeRef`: any object.
public typealias CFTypeRef = AnyObject
/// Apple's `CFString`: here `NSString`.
public typealias CFString = NSString
/// Apple's `CFMutableString`: here `NSMutableString`.
public typealias CFMutableString = NSMutableString
/// Apple's `CFDictionary`: here `NSDictionary`.
public typealias CFDictionary = NSDictionary
/// Apple's `CFMutableDictionary`: here `NSMutableDictionary`.
public typealias CFMutableDictionary = NSMutableDictionary
/// Apple's `CFData`: here `NSData`.
public typealias CFData = NSData
/// Apple's `CFMutableData`: here `NSMutableData`.
public typealias CFMutableData = NSMutableData
/// Apple's `CFArray`: here `NSArray`.
public typealias CFArray = NSArray
/// Apple's `CFMutableArray`: here `NSMutableArray`.
public typealias CFMutableArray = NSMutableArray
/// Apple's `CFBoolean`: here `NSNumber`.
public typealias CFBoolean = NSNumber
/// Apple's `CFNumber`: here `NSNumber`.
public typealias CFNumber = NSNumber
/// Apple's `CFDate`: here `NSDate`.
public typealias CFDate = NSDate
/// Apple's `CFError`: here `NSError`.
public typealias CFError = NSError
/// Apple's `CFErrorDomain`: a string.
public typealias CFErrorDomain = CFString
/// Apple's `CFIndex`.
public typealias CFIndex = Int
/// Apple's `CFOptionFlags`.
public typealias CFOptionFlags = UInt
/// Apple's `OSStatus`: a status code, 0 (`errSecSuccess`) or one of the `errSec*` constants.
public typealias OSStatus = Int32

/// Apple's `kCFBooleanTrue`.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
/// Apple's `kCFBooleanFalse`.
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)

/// Apple's `CFAllocator`. Memory is managed by Swift here, so an allocator is accepted and ignored.
public final class CFAllocator: Sendable {
    init() {}
}

/// Apple's `kCFAllocatorDefault`, accepted wherever an allocator is (and ignored).
public let kCFAllocatorDefault: CFAllocator! = CFAllocator()

/// The domain of an error (Apple's `CFErrorGetDomain`).
@discardableResult
public func CFErrorGetDomain(_ err: CFError!) -> CFErrorDomain! {
    NSString(string: err.domain)
}

/// The code of an error (Apple's `CFErrorGetCode`).
@discardableResult
public func CFErrorGetCode(_ err: CFError!) -> CFIndex {
    err.code
}

/// The user-info dictionary of an error (Apple's `CFErrorCopyUserInfo`).
@discardableResult
public func CFErrorCopyUserInfo(_ err: CFError!) -> CFDictionary! {
    let info = NSMutableDictionary()
    for (key, value) in err.userInfo {
        info.setObject(value, forKey: NSString(string: key))
    }
    return info
}

/// A description of an error (Apple's `CFErrorCopyDescription`).
@discardableResult
public func CFErrorCopyDescription(_ err: CFError!) -> CFString! {
    NSString(string: err.localizedDescription)
}
