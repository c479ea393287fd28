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

    /// Reads the backup at `path` and opens it with `passphrase`.
    public static func read(from path: String, passphrase: SecureBytes) throws(StoreError) -> SecureBytes {
        let (directoryPath, name) = VaultDirectory.split(path)
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(directoryPath)
        } catch {
            throw StoreError.system(error, "open the directory of", path: path)
        }
        defer { try? directory.close() }
        let bytes = try VaultDirectory.readSmallFile(name, in: directory, path: path, limit: maximumByteCount)
        return try envelope.open(bytes, passphrase: passphrase, path: path)
    }
}
