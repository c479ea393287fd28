import VaultStore

/// A status code with the value of the matching `errSec*` constant of Apple's Security framework, so
/// that every face of the vault (Swift, `Security`, C, exit codes) speaks the same numbers.
public struct VaultStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `OSStatus` value.
    public let rawValue: Int32

    /// Wraps a raw status.
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// errSecSuccess (0).
    public static let success = VaultStatus(rawValue: 0)
    /// errSecUnimplemented (-4): a feature this vault does not offer (certificates, keys, identities).
    public static let unimplemented = VaultStatus(rawValue: -4)
    /// errSecIO (-36): an input/output failure.
    public static let io = VaultStatus(rawValue: -36)
    /// errSecParam (-50): a parameter is not valid.
    public static let param = VaultStatus(rawValue: -50)
    /// errSecWrPerm (-61): the operating system denied access, or a vault file is unsafe to use.
    public static let permissionDenied = VaultStatus(rawValue: -61)
    /// errSecAllocate (-108): memory could not be allocated.
    public static let allocate = VaultStatus(rawValue: -108)
    /// errSecAuthFailed (-25293): the passphrase is wrong.
    public static let authFailed = VaultStatus(rawValue: -25293)
    /// errSecNotAvailable (-25291): something the operation needs is not available: the crypto library,
    /// or a fleet group's etcd (out of reach or without quorum; nothing was changed).
    public static let notAvailable = VaultStatus(rawValue: -25291)
    /// errSecNoSuchKeychain (-25294): there is no vault at the path.
    public static let noSuchVault = VaultStatus(rawValue: -25294)
    /// errSecDuplicateKeychain (-25296): a vault already exists at the path.
    public static let duplicateVault = VaultStatus(rawValue: -25296)
    /// errSecDuplicateItem (-25299): an item with this primary key exists.
    public static let duplicateItem = VaultStatus(rawValue: -25299)
    /// errSecItemNotFound (-25300): no item matches.
    public static let itemNotFound = VaultStatus(rawValue: -25300)
    /// errSecNoSuchAttr (-25303): an attribute that the class does not have.
    public static let noSuchAttribute = VaultStatus(rawValue: -25303)
    /// errSecNoSuchClass (-25306): an item class that does not exist.
    public static let noSuchClass = VaultStatus(rawValue: -25306)
    /// errSecInteractionNotAllowed (-25308): the vault or the item's class key is locked.
    public static let interactionNotAllowed = VaultStatus(rawValue: -25308)
    /// errSecDecode (-26275): a file failed its integrity check or could not be decoded.
    public static let decode = VaultStatus(rawValue: -26275)
    /// errSecMissingEntitlement (-34018): the client is not entitled to the access group.
    public static let missingEntitlement = VaultStatus(rawValue: -34018)

    /// The name of the matching Apple constant, e.g. "errSecItemNotFound".
    public var name: String {
        switch self {
        case .success: return "errSecSuccess"
        case .unimplemented: return "errSecUnimplemented"
        case .io: return "errSecIO"
        case .param: return "errSecParam"
        case .permissionDenied: return "errSecWrPerm"
        case .allocate: return "errSecAllocate"
        case .notAvailable: return "errSecNotAvailable"
        case .noSuchVault: return "errSecNoSuchKeychain"
        case .authFailed: return "errSecAuthFailed"
        case .duplicateVault: return "errSecDuplicateKeychain"
        case .duplicateItem: return "errSecDuplicateItem"
        case .itemNotFound: return "errSecItemNotFound"
        case .noSuchAttribute: return "errSecNoSuchAttr"
        case .noSuchClass: return "errSecNoSuchClass"
        case .interactionNotAllowed: return "errSecInteractionNotAllowed"
        case .decode: return "errSecDecode"
        case .missingEntitlement: return "errSecMissingEntitlement"
        default: return "OSStatus \(rawValue)"
        }
    }

    /// The name and the value, e.g. "errSecItemNotFound (-25300)".
    public var description: String { "\(name) (\(rawValue))" }
}

/// The one error type of the vault API: a status with Apple's value, a message that names the item,
/// group or path (never a secret), and the underlying cause.
public struct VaultError: Error, Sendable, CustomStringConvertible {
    /// The status, with the value of Apple's matching `errSec*` constant.
    public let status: VaultStatus
    /// A sentence naming the item, group or path, and the fix where there is one.
    public let message: String
    /// The underlying error (the store's, the crypto library's, the system's or the archive's), if any:
    /// for its description; its type is not part of this API.
    public let cause: (any Error & Sendable)?

    /// Makes an error.
    public init(_ status: VaultStatus, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.status = status
        self.message = message
        self.cause = cause
    }

    /// The message.
    public var description: String { message }

    /// Translates a store failure, keeping its message (which names the path).
    @usableFromInline package init(_ error: StoreError) {
        let status: VaultStatus
        switch error.code {
        case .vaultAlreadyExists: status = .duplicateVault
        case .vaultNotFound: status = .noSuchVault
        case .insecureFile, .permissionDenied: status = .permissionDenied
        case .unsupportedFormat, .needsUpgrade, .integrity, .missingKey: status = .decode
        case .io: status = .io
        case .invalidName: status = .param
        case .cryptoUnavailable: status = .notAvailable
        case .locked: status = .interactionNotAllowed
        case .wrongPassphrase, .wrongKey: status = .authFailed
        case .groupNotFound: status = .itemNotFound
        case .notAMember: status = .missingEntitlement
        case .unavailable: status = .notAvailable
        case .conflict: status = .io
        }
        self.init(status, error.description, cause: error)
    }
}

extension VaultError: StoreErrorConvertible {}

extension VaultError {
    /// Whether the store said that the vault has no such group (as a member of shared groups sees it).
    package var isMissingGroup: Bool { (cause as? StoreError)?.code == .groupNotFound }
}

/// Runs `body`, turning a `StoreError` into a `VaultError`.
@inline(__always)
func translatingStoreErrors<R>(_ body: () throws(StoreError) -> R) throws(VaultError) -> R {
    do {
        return try body()
    } catch {
        throw VaultError(error)
    }
}
