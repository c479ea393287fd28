import VaultStore

/// The item classes the vault stores, with the raw values of `kSecClass*`.
public enum ItemClass: String, Sendable, Hashable, Codable, CaseIterable {
    /// kSecClassGenericPassword ("genp"): primary key = group, service, account, synchronizable.
    case genericPassword = "genp"
    /// kSecClassInternetPassword ("inet"): primary key = group, account, security domain, server,
    /// protocol, authentication type, port, path, synchronizable.
    case internetPassword = "inet"
}

/// When an item may be read, with the raw values of `kSecAttrAccessible*`. Stored with every item;
/// enforcement by class keys comes with the key-protection work.
public enum Accessibility: String, Sendable, Hashable, Codable, CaseIterable {
    /// kSecAttrAccessibleWhenUnlocked ("ak"), Apple's default.
    case whenUnlocked = "ak"
    /// kSecAttrAccessibleAfterFirstUnlock ("ck"): what background services use.
    case afterFirstUnlock = "ck"
    /// kSecAttrAccessibleAlways ("dk").
    case always = "dk"
    /// kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly ("akpu").
    case whenPasscodeSetThisDeviceOnly = "akpu"
    /// kSecAttrAccessibleWhenUnlockedThisDeviceOnly ("aku").
    case whenUnlockedThisDeviceOnly = "aku"
    /// kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly ("cku").
    case afterFirstUnlockThisDeviceOnly = "cku"
    /// kSecAttrAccessibleAlwaysThisDeviceOnly ("dku").
    case alwaysThisDeviceOnly = "dku"
}

extension Accessibility {
    /// The class key that protects items of this accessibility.
    public var protectionClass: ProtectionClass {
        switch self {
        case .always, .alwaysThisDeviceOnly: return .always
        case .afterFirstUnlock, .afterFirstUnlockThisDeviceOnly: return .afterFirstUnlock
        case .whenUnlocked, .whenUnlockedThisDeviceOnly, .whenPasscodeSetThisDeviceOnly: return .whenUnlocked
        }
    }
}

extension Optional where Wrapped == Accessibility {
    /// A missing accessibility is Apple's default, `whenUnlocked`.
    var protectionClass: ProtectionClass { self?.protectionClass ?? .whenUnlocked }
}
