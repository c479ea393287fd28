import Foundation
import Vault

/// Apple's `SecAccessControlCreateFlags`, with Apple's raw values (SecAccessControl.h). The flags that
/// ask for user presence, biometry, a passcode or a companion device have no meaning on Linux: they are
/// kept in the `SecAccessControl` but not enforced (see the README).
public struct SecAccessControlCreateFlags: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: CFOptionFlags
    /// Wraps raw bits.
    public init(rawValue: CFOptionFlags) { self.rawValue = rawValue }

    /// kSecAccessControlUserPresence (1 << 0).
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1 << 0)
    /// kSecAccessControlBiometryAny (1 << 1).
    public static let biometryAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// kSecAccessControlTouchIDAny, the old name of `biometryAny`.
    public static let touchIDAny = SecAccessControlCreateFlags(rawValue: 1 << 1)
    /// kSecAccessControlBiometryCurrentSet (1 << 3).
    public static let biometryCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// kSecAccessControlTouchIDCurrentSet, the old name of `biometryCurrentSet`.
    public static let touchIDCurrentSet = SecAccessControlCreateFlags(rawValue: 1 << 3)
    /// kSecAccessControlDevicePasscode (1 << 4).
    public static let devicePasscode = SecAccessControlCreateFlags(rawValue: 1 << 4)
    /// kSecAccessControlWatch (1 << 5).
    public static let watch = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// kSecAccessControlCompanion (1 << 5), the newer name of `watch`.
    public static let companion = SecAccessControlCreateFlags(rawValue: 1 << 5)
    /// kSecAccessControlOr (1 << 14).
    public static let or = SecAccessControlCreateFlags(rawValue: 1 << 14)
    /// kSecAccessControlAnd (1 << 15).
    public static let and = SecAccessControlCreateFlags(rawValue: 1 << 15)
    /// kSecAccessControlPrivateKeyUsage (1 << 30).
    public static let privateKeyUsage = SecAccessControlCreateFlags(rawValue: 1 << 30)
    /// kSecAccessControlApplicationPassword (1 << 31).
    public static let applicationPassword = SecAccessControlCreateFlags(rawValue: 1 << 31)
}

/// Apple's `SecAccessControl`: a protection class (`kSecAttrAccessible*`) and constraint flags, for
/// `kSecAttrAccessControl`. The vault stores the protection class as the item's `kSecAttrAccessible`.
public final class SecAccessControl: Hashable, Sendable, CustomStringConvertible {
    /// The protection class.
    let protection: Accessibility
    /// The constraint flags (kept, not enforced).
    let flags: SecAccessControlCreateFlags

    init(protection: Accessibility, flags: SecAccessControlCreateFlags) {
        self.protection = protection
        self.flags = flags
    }

    /// Equal when protection and flags are.
    public static func == (lhs: SecAccessControl, rhs: SecAccessControl) -> Bool {
        lhs.protection == rhs.protection && lhs.flags == rhs.flags
    }

    /// Hashes protection and flags.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(protection)
        hasher.combine(flags.rawValue)
    }

    /// The protection and flags, e.g. "SecAccessControl(protection: ak, flags: 0x1)".
    public var description: String {
        "SecAccessControl(protection: \(protection.rawValue), flags: 0x\(String(flags.rawValue, radix: 16)))"
    }
}

/// Makes an access control object (Apple's `SecAccessControlCreateWithFlags`). `protection` must be
/// one of the `kSecAttrAccessible*` values; otherwise the result is nil and `error` (if given)
/// receives an `NSOSStatusErrorDomain` error with code `errSecParam`. The allocator is ignored.
@discardableResult
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: CFTypeRef, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? {
    guard let name = protection as? String, let accessibility = Accessibility(rawValue: name) else {
        error?.pointee = Unmanaged.passRetained(
            NSError(
                domain: NSOSStatusErrorDomain, code: Int(errSecParam),
                userInfo: [NSLocalizedDescriptionKey: "protection is not a kSecAttrAccessible value"]))
        return nil
    }
    return SecAccessControl(protection: accessibility, flags: flags)
}
