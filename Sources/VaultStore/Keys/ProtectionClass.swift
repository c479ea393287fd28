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
        let keys: [SymmetricKey]
        do {
            keys = try KeyDerivation.subkeys(Self.derivations(master: .key(master)))
        } catch {
            throw StoreError.crypto(error, "cannot derive the class keys")
        }
        self = Self.assemble(master: master, derived: keys[...])
    }

    /// Where a class key's derivation finds the master key: a key of its own, or the first key of
    /// the allocation the class keys are made in (a master key read into it, `MasterKeyFile.read`).
    enum MasterKeyPlace {
        case key(SymmetricKey)
        case firstInAllocation
    }

    /// The derivations of the three class keys from `master`.
    static func derivations(master: MasterKeyPlace) -> [KeyDerivation.Derivation] {
        ProtectionClass.allCases.map {
            switch master {
            case .key(let key):
                KeyDerivation.Derivation(of: key, domain: ProtectionClass.domain, context: [$0.rawValue])
            case .firstInAllocation:
                KeyDerivation.Derivation(ofEarlier: 0, domain: ProtectionClass.domain, context: [$0.rawValue])
            }
        }
    }

    /// The class keys from what `derivations(master:)` made.
    static func assemble(master: SymmetricKey, derived keys: ArraySlice<SymmetricKey>) -> ClassKeys {
        let start = keys.startIndex
        return ClassKeys(
            master: master, always: keys[start], afterFirstUnlock: keys[start + 1], whenUnlocked: keys[start + 2])
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
