import VaultCrypto
import VaultSystem

/// What seals a backup: a passphrase (Argon2id, for a person) or the 32 raw bytes of a backup key
/// file (no Argon2id, for a cron job or a service: nobody types a passphrase there).
public struct BackupKey: Sendable {
    let key: PassphraseEnvelope.Key

    /// A passphrase; `limits` is the Argon2id cost of a new backup (opening uses the backup's own).
    public static func passphrase(_ passphrase: SecureBytes, limits: PassphraseKeyDerivation.Limits = .moderate)
        -> BackupKey
    {
        BackupKey(key: .passphrase(passphrase, limits: limits))
    }

    /// The backup key file at `path`: 32 raw bytes, a regular file owned by this user or root that group
    /// and others cannot access, checked as an external master key file is. Make one with
    /// `(umask 077 && head -c 32 /dev/urandom > FILE)`, and keep it apart from the backups it opens.
    package static func keyFile(_ path: String) throws(StoreError) -> BackupKey {
        do {
            return BackupKey(key: .raw(try ExternalKeyFile.load(path)))
        } catch  where error.errno == .noSuchFileOrDirectory {
            throw StoreError(
                .io,
                "the backup key file \(path) does not exist; make one with "
                    + "`(umask 077 && head -c \(SymmetricKey.byteCount) /dev/urandom > \(path))`",
                path: path, cause: error.cause)
        } catch  where error.code == .integrity {
            // Its size: the check of a master key file, whose words (a passphrase-wrapped size, a restore
            // from a backup) are not this file's.
            throw StoreError(
                .integrity,
                "the backup key file \(path) is not \(SymmetricKey.byteCount) raw bytes; make one with "
                    + "`(umask 077 && head -c \(SymmetricKey.byteCount) /dev/urandom > FILE)`",
                path: path, cause: error)
        }
    }
}

/// A backup file outside the vault: the vault's items sealed under a passphrase or a backup key file
/// (a `PassphraseEnvelope` with magic "VLTX"), written once (never over an existing file), 0600,
/// durably; or the same bytes on a stream (`vault export -`).
public enum BackupFile {
    static let envelope = PassphraseEnvelope(
        magic: Array("VLTX".utf8), what: "a vault backup", acceptsRawKey: true, streamVersion: BackupStream.version)
    /// The largest backup read back (1 GiB).
    package static let maximumByteCount = 1 << 30
    /// The bytes of a backup's header: what `inspect(header:name:)` needs.
    package static let headerByteCount = PassphraseEnvelope.headerByteCount
    /// The fewest bytes a backup can have.
    package static let minimumByteCount = PassphraseEnvelope.overheadByteCount

    /// What a backup is sealed under, as its header says.
    public enum Sealing: Sendable, Hashable {
        /// A passphrase (Argon2id).
        case passphrase
        /// A backup key file.
        case keyFile
    }

    /// Seals `payload` (the archive of a backup) under `key`: the bytes of a backup file.
    package static func seal(_ payload: [UInt8], key: BackupKey) throws(StoreError) -> [UInt8] {
        try envelope.seal(payload, key: key.key)
    }

    /// Seals `payload` under `key` and writes it to `path`, which must not exist yet.
    package static func write(_ payload: [UInt8], to path: String, key: BackupKey) throws(StoreError) {
        try write(sealed: try seal(payload, key: key), to: path)
    }

    /// Writes the sealed backup `sealed` to `path`, which must not exist (0600, durably).
    package static func write(sealed: [UInt8], to path: String) throws(StoreError) {
        let file = FilePath(path)
        let directoryPath = file.parent
        let directory = try VaultDirectory.openOutside(directoryPath, verb: "open the directory of the backup")
        defer { try? directory.close() }
        do {
            try AtomicFile.createExclusively(
                file.lastComponent, contents: .plain(sealed), in: directory, directoryPath: directoryPath)
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; a backup never overwrites a file", path: path)
        }
    }

    /// Checks the backup at `path` without its passphrase or key and without reading it whole: a
    /// regular file of a plausible size whose header has the backup's magic, a version this build
    /// reads, and an Argon2id cost within `ceiling`. Run before asking for the passphrase; says
    /// what the backup is sealed under.
    @discardableResult
    package static func inspect(at path: String, ceiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(StoreError) -> Sealing
    {
        let file = FilePath(path)
        let directory = try openDirectory(of: file)
        defer { try? directory.close() }
        let header = try SmallFile.readPrefix(
            file.lastComponent, in: directory, path: file, prefix: headerByteCount, minimumSize: minimumByteCount,
            limit: maximumByteCount, what: "a vault backup")
        return try inspect(header: header, name: path, ceiling: ceiling)
    }

    /// `inspect`'s checks of the first `headerByteCount` bytes of a backup read from a stream, named
    /// `name` in messages: what to run before reading the rest.
    @discardableResult
    package static func inspect(header: [UInt8], name: String, ceiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(StoreError) -> Sealing
    {
        try envelope.checkHeader(header, path: name, ceiling: ceiling) == PassphraseEnvelope.rawKey
            ? .keyFile : .passphrase
    }

    /// Every check but the passphrase or key of the whole backup `sealed` (size, checksum, header),
    /// named `name` in messages: damage is told apart from a wrong key before either is asked for.
    @discardableResult
    package static func check(_ sealed: [UInt8], name: String, ceiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(StoreError) -> Sealing
    {
        guard sealed.count <= maximumByteCount else {
            throw StoreError(.integrity, "\(name) is more than \(maximumByteCount) bytes: not a vault backup")
        }
        try envelope.check(sealed, path: name, ceiling: ceiling)
        return sealed[5] == PassphraseEnvelope.rawKey ? .keyFile : .passphrase
    }

    /// Reads the backup at `path` and opens it with `key`, after `inspect`'s checks.
    package static func read(from path: String, key: BackupKey, ceiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(StoreError) -> SecureBytes
    {
        try inspect(at: path, ceiling: ceiling)
        let file = FilePath(path)
        let directory = try openDirectory(of: file)
        defer { try? directory.close() }
        let bytes = try SmallFile.read(file.lastComponent, in: directory, path: file, limit: maximumByteCount)
        return try open(bytes, name: path, key: key, ceiling: ceiling)
    }

    /// Reads the backup at `path` and opens it with `passphrase`, after `inspect`'s checks.
    package static func read(
        from path: String, passphrase: SecureBytes, ceiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(StoreError) -> SecureBytes {
        try read(from: path, key: .passphrase(passphrase), ceiling: ceiling)
    }

    /// Opens the backup bytes `sealed` (named `name` in messages) with `key`.
    package static func open(
        _ sealed: [UInt8], name: String, key: BackupKey, ceiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(StoreError) -> SecureBytes {
        guard sealed.count <= maximumByteCount else {
            throw StoreError(.integrity, "\(name) is more than \(maximumByteCount) bytes: not a vault backup")
        }
        guard !BackupStream.isStreamed(sealed) else {
            throw StoreError(.unsupportedFormat, "\(name) is a streamed backup: open it with `BackupStream.Reader`")
        }
        return try envelope.open(sealed, key: key.key, path: name, ceiling: ceiling)
    }

    private static func openDirectory(of file: FilePath) throws(StoreError) -> FileDescriptor {
        try VaultDirectory.openOutside(file.parent, verb: "open the directory of", naming: file)
    }
}
