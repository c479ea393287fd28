import VaultCrypto
import VaultSystem

/// An error from the on-disk store: what kind, a message that names the file, group or item, the path
/// and the system call where there is one, and the underlying cause (a `SystemCallError` or a
/// `CryptoError`). Never contains key or secret bytes.
@usableFromInline package struct StoreError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure; the layers above map it to a status code.
    package enum Code: Sendable, Equatable {
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
        /// The vault is of the old format 1, which is read only to be upgraded (`VaultStore.upgrade`).
        case needsUpgrade
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
        /// The vault has no such access group (as a member sees it).
        case groupNotFound
        /// The kernel refused a shared group's files to this process: it is not in the group's Unix
        /// group.
        case notAMember
        /// The passphrase does not unwrap the master key.
        case wrongPassphrase
        /// The master key (a key file, or `master.key`) is not this vault's: neither the marker nor
        /// `classes.key` opens under it.
        case wrongKey
        /// A group's `group.key` is missing while the group holds items: its items are not damaged, and
        /// nothing may remove them; the key comes back only from a backup.
        case missingKey
        /// A fleet group's replica cannot be reached, or has no quorum: nothing was changed.
        case unavailable
        /// A fleet group's item changed on another machine since this one last read it.
        case conflict
    }

    /// The kind of failure.
    package let code: Code
    /// A sentence that names the file, group or item, and the fix where there is one.
    package let message: String
    /// The path concerned, when there is one.
    package let path: String?
    /// The underlying error (a `SystemCallError`, a `CryptoError`, another `StoreError`), if any.
    package let cause: (any Error & Sendable)?

    /// Makes an error.
    package init(_ code: Code, _ message: String, path: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.cause = cause
    }

    /// The message, followed by the cause when it adds something: not when the message says it already,
    /// in its words or the system's ("… does not exist", "Permission denied").
    @usableFromInline package var description: String {
        guard let cause else { return message }
        let text = "\(cause)"
        let said = message.lowercased()
        if said.contains(text.lowercased()) { return message }
        if let errno = (cause as? SystemCallError)?.errno ?? (cause as? StoreError)?.errno,
            (Self.paraphrases[errno] ?? []).contains(where: { said.contains($0) })
        {
            return message
        }
        return "\(message) (\(text))"
    }

    /// How messages say an error number in words, so that the system's text is not repeated after them.
    private static let paraphrases: [Errno: [String]] = [
        .noSuchFileOrDirectory: ["does not exist", "is missing", "no such file"],
        .permissionDenied: ["permission denied"],
        .fileExists: ["already exists"],
    ]

    /// The system call that failed, if the cause is one.
    package var systemCall: SystemOperation? { (cause as? SystemCallError)?.systemCall }

    /// The system error underneath: of the cause, or of the cause's cause when that is a `StoreError`
    /// (an error that wraps another keeps its errno visible).
    package var errno: Errno? { (cause as? SystemCallError)?.errno ?? (cause as? StoreError)?.errno }

    /// An error of `code` about `path` whose cause is a failed `call`.
    init(_ code: Code, _ message: String, path: FilePath, failed call: SystemOperation, _ error: Errno) {
        self.init(code, message, path: path.string, cause: SystemCallError(systemCall: call, errno: error))
    }

    /// Classifies a failed system call on `path`: `what` says what was being done ("write", "open").
    static func system(_ error: Errno, _ call: SystemOperation, _ what: String, path: FilePath) -> StoreError {
        let cause = SystemCallError(systemCall: call, errno: error)
        switch error {
        case .permissionDenied, .notPermitted:
            return StoreError(.permissionDenied, "cannot \(what) \(path): \(error)", path: path.string, cause: cause)
        case .tooManySymbolicLinks:
            return StoreError(
                .insecureFile, "refusing to \(what) \(path): it is a symbolic link", path: path.string, cause: cause)
        default:
            return StoreError(.io, "cannot \(what) \(path): \(error)", path: path.string, cause: cause)
        }
    }

    /// Wraps a crypto failure that is not an authentication failure.
    package static func crypto(_ error: CryptoError, _ what: String) -> StoreError {
        StoreError(.cryptoUnavailable, "\(what): \(error.message)", cause: error)
    }
}

/// An error type that a store failure can become: the store's reads and writes that run the caller's
/// code (decoding a record, the body of a transaction) throw the caller's error type, so that neither
/// side needs a ladder of casts.
@usableFromInline package protocol StoreErrorConvertible: Error {
    /// The caller's error for `error`.
    init(_ error: StoreError)
}

extension StoreError: StoreErrorConvertible {
    /// `error` itself.
    @usableFromInline package init(_ error: StoreError) {
        self = error
    }
}

extension StoreError {
    /// `error`, of a fleet group's cache or high-water mark, after its replica (`replica` names it:
    /// "etcd") applied the change: said so, since a caller that took the failure for "nothing changed"
    /// would be wrong on every machine. The code stays `error`'s; the next read of the group takes the
    /// change from the replica.
    package static func afterReplicaCommit(_ error: StoreError, group: GroupName, replica: String) -> StoreError {
        StoreError(
            error.code,
            "fleet group \(group): the change reached \(replica) (every machine reads it now), but this machine "
                + "could not record it: \(error.message); its next read of the group takes it from \(replica)",
            path: error.path, cause: error)
    }
}
