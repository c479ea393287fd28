import VaultCrypto
import VaultSystem

/// An error from the on-disk store: what kind, a message that names the file, group or item, and the
/// underlying cause (an `Errno` or a `CryptoError`). Never contains key or secret bytes.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; the layers above map it to a status code.
    public enum Code: Sendable, Equatable {
        /// `init` found a vault (or its master key) already there; nothing was overwritten.
        case vaultAlreadyExists
        /// There is no vault at the path.
        case vaultNotFound
        /// A file or directory of the vault is unsafe to use: wrong owner, group/world access, a
        /// symlink, or not the kind of file it should be.
        case insecureFile
        /// The operating system denied access (EACCES, EPERM).
        case permissionDenied
        /// The vault or file was written by a format version this build does not read.
        case unsupportedFormat
        /// A file failed its integrity check: tampered, truncated, damaged, moved or under another key.
        case integrity
        /// An input/output failure: EIO, ENOSPC, EFBIG, a failed fsync or rename, …
        case io
        /// A name (group, item id) that the vault does not accept.
        case invalidName
        /// The crypto library could not be used (initialisation or secure memory).
        case cryptoUnavailable
        /// The vault is locked: its key needs a passphrase (or a key file) that was not given.
        case locked
        /// The passphrase does not unwrap the master key.
        case wrongPassphrase
    }

    /// The kind of failure.
    public let code: Code
    /// A sentence that names the file, group or item, and the fix where there is one.
    public let message: String
    /// The path concerned, when there is one.
    public let path: String?
    /// The underlying error (an `Errno` or `CryptoError`), if any.
    public let cause: (any Error & Sendable)?

    /// Makes an error.
    public init(_ code: Code, _ message: String, path: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    /// The message, followed by the cause when it adds something.
    public var description: String {
        guard let cause else { return message }
        return "\(message) (\(cause))"
    }

    /// The system error underneath, if the cause is one.
    public var errno: Errno? { cause as? Errno }

    /// Classifies a failed system call on `path`: `what` says what was being done ("write", "open").
    static func system(_ error: Errno, _ what: String, path: String) -> StoreError {
        switch error {
        case .permissionDenied, .notPermitted:
            return StoreError(.permissionDenied, "cannot \(what) \(path): \(error)", path: path, cause: error)
        case .tooManySymbolicLinks:
            return StoreError(
                .insecureFile, "refusing to \(what) \(path): it is a symbolic link", path: path, cause: error)
        default:
            return StoreError(.io, "cannot \(what) \(path): \(error)", path: path, cause: error)
        }
    }

    /// Wraps a crypto failure that is not an authentication failure.
    static func crypto(_ error: any Error, _ what: String) -> StoreError {
        if let error = error as? CryptoError {
            return StoreError(.cryptoUnavailable, "\(what): \(error.message)", cause: error)
        }
        if let error = error as? StoreError { return error }
        return StoreError(.cryptoUnavailable, "\(what): \(error)")
    }
}
