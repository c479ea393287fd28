import VaultCrypto

/// When an item can be read, as Apple's keybag classes: every item file is encrypted under the key of
/// its class (recorded, authenticated, in the file's header).
///
/// In a vault whose key is a key file, every class key is always there. In a passphrase vault,
/// `always` items need no unlock (their key is in `always.key`), `afterFirstUnlock` items need a
/// `vault unlock` since boot (the key stays in the kernel keyring), and `whenUnlocked` items need an
/// unlock that `vault lock` and the timeout end.
public enum ProtectionClass: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// kSecAttrAccessibleAlways(ThisDeviceOnly).
    case always = 0
    /// kSecAttrAccessibleAfterFirstUnlock(ThisDeviceOnly).
    case afterFirstUnlock = 1
    /// kSecAttrAccessibleWhenUnlocked(ThisDeviceOnly), WhenPasscodeSetThisDeviceOnly.
    case whenUnlocked = 2

    /// The class's name, as in messages.
    public var description: String {
        switch self {
        case .always: return "Always"
        case .afterFirstUnlock: return "AfterFirstUnlock"
        case .whenUnlocked: return "WhenUnlocked"
        }
    }

    static let domain = KeyDerivation.Domain("vault.class.v1")
}

/// The class keys a store holds: `always` always, the others when the vault is unlocked (or has a key
/// file). Each is derived from the master key: K = BLAKE2b(master, "vault.class.v1", [class]).
struct ClassKeys: Sendable {
    let always: SymmetricKey
    let afterFirstUnlock: SymmetricKey?
    let whenUnlocked: SymmetricKey?
    /// The master key, when this process has it (key file or passphrase), not from the cache.
    let master: SymmetricKey?

    init(master: SymmetricKey) throws(StoreError) {
        self = try Self.derive(master: master, preparing: []).classKeys
    }

    /// The class keys of `master` and, in the same secure allocation (`KeyDerivation.subkeys`: one
    /// allocation costs a dozen system calls), the format-1 keys of `groups` (a client's groups, which
    /// its first read needs), keyed by the class keys made just before them: the same keys as
    /// `derive` and `GroupKeys(classKeys:group:vaultID:)` give.
    static func derive(master: SymmetricKey, preparing groups: [GroupName]) throws(StoreError) -> (
        classKeys: ClassKeys, groups: [(group: GroupName, keys: ArraySlice<SymmetricKey>)]
    ) {
        let classes = ProtectionClass.allCases
        var derivations = classes.map {
            KeyDerivation.Derivation(of: master, domain: ProtectionClass.domain, context: [$0.rawValue])
        }
        for group in groups {
            derivations += GroupKeys.formatOneDerivations(of: group, classes: classes) {
                protectionClass, domain, context in
                KeyDerivation.Derivation(
                    ofEarlier: classes.firstIndex(of: protectionClass)!, domain: domain, context: context)
            }
        }
        let keys: [SymmetricKey]
        do {
            keys = try KeyDerivation.subkeys(derivations)
        } catch {
            throw StoreError.crypto(error, "cannot derive the class keys")
        }
        let perGroup = 1 + classes.count
        let prepared = groups.enumerated().map { index, group in
            (group: group, keys: keys[(classes.count + index * perGroup)..<(classes.count + (index + 1) * perGroup)])
        }
        return (ClassKeys(master: master, always: keys[0], afterFirstUnlock: keys[1], whenUnlocked: keys[2]), prepared)
    }

    private init(master: SymmetricKey, always: SymmetricKey, afterFirstUnlock: SymmetricKey, whenUnlocked: SymmetricKey)
    {
        self.master = master
        self.always = always
        self.afterFirstUnlock = afterFirstUnlock
        self.whenUnlocked = whenUnlocked
    }

    init(always: SymmetricKey, afterFirstUnlock: SymmetricKey?, whenUnlocked: SymmetricKey?) {
        self.master = nil
        self.always = always
        self.afterFirstUnlock = afterFirstUnlock
        self.whenUnlocked = whenUnlocked
    }

    static func derive(_ master: SymmetricKey, _ protectionClass: ProtectionClass) throws(StoreError) -> SymmetricKey {
        do {
            return try KeyDerivation.subkey(
                of: master, domain: ProtectionClass.domain, context: [protectionClass.rawValue])
        } catch {
            throw StoreError.crypto(error, "cannot derive the \(protectionClass) class key")
        }
    }

    func key(_ protectionClass: ProtectionClass) -> SymmetricKey? {
        switch protectionClass {
        case .always: return always
        case .afterFirstUnlock: return afterFirstUnlock
        case .whenUnlocked: return whenUnlocked
        }
    }
}
