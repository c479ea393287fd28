import VaultCrypto
import VaultSystem

/// A backup file outside the vault: the vault's items sealed under a passphrase (a
/// `PassphraseEnvelope` with magic "VLTX"), written once (never over an existing file), 0600, durably.
public enum BackupFile {
    static let envelope = PassphraseEnvelope(magic: Array("VLTX".utf8), what: "a vault backup")
    /// The largest backup read back (1 GiB).
    public static let maximumByteCount = 1 << 30

    /// Seals `payload` under `passphrase` and writes it to `path`, which must not exist yet.
    public static func write(
        _ payload: UnsafeRawBufferPointer, to path: String, passphrase: SecureBytes,
        limits: PassphraseKeyDerivation.Limits
    ) throws(StoreError) {
        let sealed = try envelope.seal(payload, passphrase: passphrase, limits: limits)
        let (directoryPath, name) = VaultDirectory.split(path)
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(directoryPath)
        } catch {
            throw StoreError.system(error, "open the directory of the backup", path: directoryPath)
        }
        defer { try? directory.close() }
        do {
            try sealed.withStoreBytes { bytes throws(StoreError) in
                try AtomicFile.createExclusively(name, contents: bytes, in: directory, directoryPath: directoryPath)
            }
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; a backup never overwrites a file", path: path)
        }
    }

    /// Checks the backup at `path` without its passphrase and without reading it whole: a regular
    /// file of a plausible size whose header has the backup's magic, a version this build reads, and
    /// an Argon2id cost within `ceiling`. Run before asking for the passphrase.
    public static func inspect(at path: String, ceiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(StoreError)
    {
        let (directoryPath, name) = VaultDirectory.split(path)
        let directory = try openDirectory(directoryPath, of: path)
        defer { try? directory.close() }
        let header = try VaultDirectory.readSmallFilePrefix(
            name, in: directory, path: path, prefix: PassphraseEnvelope.headerByteCount,
            minimumSize: PassphraseEnvelope.overheadByteCount, limit: maximumByteCount)
        try envelope.checkHeader(header, path: path, ceiling: ceiling)
    }

    /// Reads the backup at `path` and opens it with `passphrase`, after `inspect`'s checks.
    public static func read(
        from path: String, passphrase: SecureBytes, ceiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(StoreError) -> SecureBytes {
        try inspect(at: path, ceiling: ceiling)
        let (directoryPath, name) = VaultDirectory.split(path)
        let directory = try openDirectory(directoryPath, of: path)
        defer { try? directory.close() }
        let bytes = try VaultDirectory.readSmallFile(name, in: directory, path: path, limit: maximumByteCount)
        return try envelope.open(bytes, passphrase: passphrase, path: path, ceiling: ceiling)
    }

    private static func openDirectory(_ directoryPath: String, of path: String) throws(StoreError) -> FileDescriptor {
        do {
            return try FileDescriptor.currentWorkingDirectory.openDirectoryAt(directoryPath)
        } catch {
            throw StoreError.system(error, "open the directory of", path: path)
        }
    }
}
