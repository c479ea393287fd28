internal import CVaultAPI
import Vault
import VaultCrypto

/// A failure on its way to C: a status (Apple's value) and the message for
/// `vault_last_error_message()`.
struct Failure: Error {
    let status: Int32
    let message: String

    init(_ status: Int32, _ message: String) {
        self.status = status
        self.message = message
    }

    init(_ error: VaultError) {
        self.init(error.status.rawValue, error.message)
    }

    init(_ error: CryptoError) {
        switch error.code {
        case .allocationFailed: self.init(Status.allocate, error.message)
        case .initializationFailed: self.init(Status.notAvailable, error.message)
        case .invalidArgument: self.init(Status.param, error.message)
        case .authenticationFailed: self.init(Status.decode, error.message)
        }
    }

    static func param(_ message: String) -> Failure { Failure(Status.param, message) }
}

/// The header's status constants as `Int32` (Clang imports the anonymous enum's members as `Int`).
enum Status {
    static let ok = Int32(VAULT_OK)
    static let unimplemented = Int32(VAULT_ERR_UNIMPLEMENTED)
    static let io = Int32(VAULT_ERR_IO)
    static let param = Int32(VAULT_ERR_PARAM)
    static let permission = Int32(VAULT_ERR_PERMISSION)
    static let allocate = Int32(VAULT_ERR_ALLOCATE)
    static let `internal` = Int32(VAULT_ERR_INTERNAL)
    static let notAvailable = Int32(VAULT_ERR_NOT_AVAILABLE)
    static let noSuchVault = Int32(VAULT_ERR_NO_SUCH_VAULT)
    static let invalidHandle = Int32(VAULT_ERR_INVALID_HANDLE)
    static let duplicateVault = Int32(VAULT_ERR_DUPLICATE_VAULT)
    static let duplicate = Int32(VAULT_ERR_DUPLICATE)
    static let notFound = Int32(VAULT_ERR_NOT_FOUND)
    static let bufferTooSmall = Int32(VAULT_ERR_BUFFER_TOO_SMALL)
    static let noSuchAttribute = Int32(VAULT_ERR_NO_SUCH_ATTR)
    static let noSuchClass = Int32(VAULT_ERR_NO_SUCH_CLASS)
    static let interactionNotAllowed = Int32(VAULT_ERR_INTERACTION_NOT_ALLOWED)
    static let decode = Int32(VAULT_ERR_DECODE)
    static let missingEntitlement = Int32(VAULT_ERR_MISSING_ENTITLEMENT)

    /// The static description of a status for `vault_strerror`: NUL-terminated (a `StaticString`
    /// literal is), in the binary's read-only data, alive as long as the process.
    static func description(_ status: Int32) -> StaticString {
        switch status {
        case ok: return "errSecSuccess: no error"
        case unimplemented: return "errSecUnimplemented: the function or operation is not implemented"
        case io: return "errSecIO: an input/output error occurred"
        case param: return "errSecParam: one or more parameters are not valid"
        case permission: return "errSecWrPerm: permission denied, or a vault file is unsafe to use"
        case allocate: return "errSecAllocate: memory could not be allocated"
        case `internal`: return "errSecInternalComponent: an internal component failed"
        case notAvailable:
            return "errSecNotAvailable: not available now (a fleet group's etcd is out of reach, or the crypto library)"
        case noSuchVault: return "errSecNoSuchKeychain: the vault does not exist"
        case invalidHandle: return "errSecInvalidKeychain: the handle is not a live vault or iterator"
        case duplicateVault: return "errSecDuplicateKeychain: a vault already exists"
        case duplicate: return "errSecDuplicateItem: the item already exists"
        case notFound: return "errSecItemNotFound: the item could not be found"
        case bufferTooSmall: return "errSecBufferTooSmall: the buffer is too small"
        case noSuchAttribute: return "errSecNoSuchAttr: the attribute does not exist"
        case noSuchClass: return "errSecNoSuchClass: the item class does not exist"
        case interactionNotAllowed: return "errSecInteractionNotAllowed: the vault is locked"
        case decode: return "errSecDecode: the data could not be decoded or failed its integrity check"
        case missingEntitlement: return "errSecMissingEntitlement: the client is not entitled to the access group"
        default: return "unknown status"
        }
    }
}
