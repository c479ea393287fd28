import VaultCrypto
import VaultSystem

/// A key file outside the vault (`--key-file`, `VAULT_KEY_FILE`, a systemd credential; a backup key
/// file): 32 raw bytes, a regular file (not a symlink) owned by the effective user or by root
/// (systemd's credentials), not accessible to group or others.
enum ExternalKeyFile {
    /// Loads the key file at `path`.
    static func load(_ path: String) throws(StoreError) -> SymmetricKey {
        KeyFile.protectProcess()
        let filePath = FilePath(path)
        let contents = try KeyFile.read(path, in: .currentWorkingDirectory, path: filePath, ownerMayBeRoot: true)
        guard contents.count == SymmetricKey.byteCount else {
            throw StoreError(
                .integrity,
                "\(path) is \(contents.count) bytes; an external key file is exactly \(SymmetricKey.byteCount) raw bytes",
                path: path)
        }
        return try KeyFile.key(contents, path: filePath)
    }

    /// The key file `keyFile`, read when it exists, else created: 32 random bytes, written
    /// exclusively and durably (0600) into its directory, which must exist (a missing one is named,
    /// with the command that makes it).
    static func loadOrCreate(_ keyFile: String) throws(StoreError) -> SymmetricKey {
        KeyFile.protectProcess()
        if (try? FileDescriptor.currentWorkingDirectory.statusAt(keyFile)) != nil {
            return try load(keyFile)
        }
        let key = try KeyFile.randomKey()
        let file = FilePath(keyFile)
        let parent = file.parent
        let parentFD = try VaultDirectory.openOutside(parent, verb: "open the directory of the key file") { error in
            let message =
                "the directory \(parent) of the key file \(keyFile) does not exist; make it first: "
                + "`install -d -m 0700 \(parent)`"
            return StoreError(.vaultNotFound, message, path: parent, failed: .open, error)
        }
        defer { try? parentFD.close() }
        try AtomicFile.createExclusively(
            file.lastComponent, contents: .secret(key.bytes), in: parentFD, directoryPath: parent)
        return key
    }

    /// The new external key file of a rekey, at `path` in an existing directory: a new random key in a
    /// new file (0600, created exclusively and durably: temp file, fsync, hard link, fsync of the
    /// directory), or, when the name exists, the key of the 32-byte key file there, checked as `load`
    /// checks (a file that group or others can read is refused) and then fsynced with its directory: a
    /// file the operator just wrote may not be on disk yet, and after the switch it holds the only key.
    /// Returns the file's absolute path (for the rekey journal, which recovery reads from any working
    /// directory) and the key.
    static func prepareNew(_ path: String) throws(StoreError) -> (path: String, key: SymmetricKey) {
        KeyFile.protectProcess()
        let file = FilePath(path).removingTrailingSeparators
        let (parent, name) = (file.parent, file.lastComponent)
        guard !name.isEmpty, name != ".", name != ".." else {
            throw StoreError(.invalidName, "\(path) is not a file name; give the path of the new key file")
        }
        let parentFD: FileDescriptor
        let absoluteParent: String
        do {
            parentFD = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(parent.string)
            absoluteParent = try FileDescriptor.resolvedPath(parent.string)
        } catch {
            throw StoreError(
                StoreError.system(error, .open, "open", path: parent).code,
                "cannot open \(parent), the directory of the new key file \(path): \(error); it must be an existing "
                    + "directory",
                path: parent.string, cause: SystemCallError(systemCall: .open, errno: error))
        }
        defer { try? parentFD.close() }
        let absolute = (absoluteParent == "/" ? FilePath("") : FilePath(absoluteParent)) / name
        let key = try KeyFile.randomKey()
        do {
            try AtomicFile.createExclusively(name, contents: .secret(key.bytes), in: parentFD, directoryPath: parent)
            return (absolute.string, key)
        } catch  where error.errno == .fileExists {
            // The operator's own key file: used as it is, once it passes the checks of a key file.
        }
        let existing = try KeyFile.read(
            name, in: parentFD, path: FilePath(path), ownerMayBeRoot: true, sizes: [Int64(SymmetricKey.byteCount)])
        do {
            let fd = try parentFD.openAt(name, [.readOnly, .nonBlocking])
            defer { try? fd.close() }
            try fd.sync()
            try parentFD.sync()
        } catch {
            throw StoreError.system(error, .fsync, "fsync", path: FilePath(path))
        }
        return (absolute.string, try KeyFile.key(existing, path: FilePath(path)))
    }
}
