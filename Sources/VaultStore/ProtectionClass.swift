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
        let derivations = Self.derivations(master: .key(master), preparing: groups)
        let keys: [SymmetricKey]
        do {
            keys = try KeyDerivation.subkeys(derivations)
        } catch {
            throw StoreError.crypto(error, "cannot derive the class keys")
        }
        return assemble(master: master, derived: keys[...], preparing: groups)
    }

    /// Where a class key's derivation finds the master key: a key of its own, or the first key of
    /// the allocation the class keys are made in (a master key read into it, `MasterKeyFile.read`).
    enum MasterKeyPlace {
        case key(SymmetricKey)
        case firstInAllocation
    }

    /// The derivations of the three class keys from `master`, then of the format-1 keys of `groups`
    /// (each the index key and one encryption key per class), keyed by those class keys.
    static func derivations(master: MasterKeyPlace, preparing groups: [GroupName]) -> [KeyDerivation.Derivation] {
        let classes = ProtectionClass.allCases
        let first: Int
        var derivations: [KeyDerivation.Derivation]
        switch master {
        case .key(let key):
            first = 0
            derivations = classes.map {
                KeyDerivation.Derivation(of: key, domain: ProtectionClass.domain, context: [$0.rawValue])
            }
        case .firstInAllocation:
            first = 1
            derivations = classes.map {
                KeyDerivation.Derivation(ofEarlier: 0, domain: ProtectionClass.domain, context: [$0.rawValue])
            }
        }
        for group in groups {
            derivations += GroupKeys.formatOneDerivations(of: group, classes: classes) {
                protectionClass, domain, context in
                KeyDerivation.Derivation(
                    ofEarlier: first + classes.firstIndex(of: protectionClass)!, domain: domain, context: context)
            }
        }
        return derivations
    }

    /// The class keys and the prepared groups' keys from what `derivations(master:preparing:)` made.
    static func assemble(master: SymmetricKey, derived keys: ArraySlice<SymmetricKey>, preparing groups: [GroupName])
        -> (classKeys: ClassKeys, groups: [(group: GroupName, keys: ArraySlice<SymmetricKey>)])
    {
        let classes = ProtectionClass.allCases.count
        let start = keys.startIndex
        let perGroup = 1 + classes
        let prepared = groups.enumerated().map { index, group in
            let from = start + classes + index * perGroup
            return (group: group, keys: keys[from..<(from + perGroup)])
        }
        let classKeys = ClassKeys(
            master: master, always: keys[start], afterFirstUnlock: keys[start + 1], whenUnlocked: keys[start + 2])
        return (classKeys, prepared)
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
