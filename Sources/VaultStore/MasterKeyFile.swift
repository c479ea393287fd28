import VaultCrypto
import VaultSystem

/// The master key's file: `<vault>/master.key` holding the 32-byte key plainly (the key-file mode of
/// systemd's `credential.secret`) or wrapped under a passphrase (`WrappedMasterKey`), or an external
/// 32-byte key file (a systemd credential, `--key-file`). Loading refuses, naming the file and the
/// fix, any file that others could read or replace.
enum MasterKeyFile {
    static let fileName = "master.key"
    static let keyByteCount = 32

    /// Once a key is in memory, the process may no longer be dumped or ptrace-attached by the same
    /// user (`PR_SET_DUMPABLE` 0): a core file or a debugger would otherwise get the key despite
    /// `MADV_DONTDUMP` (ptrace reads any page). Called before a key is read. A failure is ignored:
    /// prctl cannot fail for this argument, and refusing to open a vault over it would help nobody.
    static func protectProcess() {
        try? ProcessIdentity.disableDumps()
    }

    /// What a key file holds: the key itself, or the key wrapped under a passphrase.
    enum Contents {
        case key(SecureBytes)
        case wrapped([UInt8], path: String)
    }

    /// Reads the master key's file as `source` says: the external key file if there is one, else
    /// `master.key` in `directory` (the vault directory, opened). A wrapped key is returned as such.
    static func read(in directory: FileDescriptor, vaultPath: String, source: KeySource) throws(StoreError)
        -> Contents
    {
        protectProcess()
        if let keyFile = source.keyFile {
            if let key = source.loadedKey { return .key(key) }
            return .key(try loadExternal(keyFile))
        }
        let path = vaultPath + "/" + fileName
        let contents: SecureBytes
        do {
            contents = try read(fileName, in: directory, path: path, ownerMayBeRoot: false)
        } catch  where error.errno == .noSuchFileOrDirectory {
            // The vault is there; its key is not: that is "locked", never "no vault" or "not found".
            throw StoreError(
                .locked,
                "\(path) is missing: the vault's key is not in it. If the vault was created with an external key "
                    + "file, give it with --key-file PATH or VAULT_KEY_FILE (or run the service with "
                    + "LoadCredential=\(KeySource.credentialName):…); otherwise restore master.key from a backup",
                path: path, cause: error.cause)
        }
        if contents.count == keyByteCount { return .key(contents) }
        return .wrapped(contents.withUnsafeBytes { [UInt8]($0) }, path: path)  // the wrapped form is not secret
    }

    /// Asks `source` for the passphrase and unwraps. No provider, or one that cannot ask (no
    /// terminal), is `locked`; a wrong passphrase is `wrongPassphrase`.
    static func unwrap(_ bytes: [UInt8], path: String, vaultPath: String, source: KeySource) throws(StoreError)
        -> SecureBytes
    {
        guard let provider = source.passphrase else {
            throw StoreError(
                .locked,
                "the vault at \(vaultPath) is locked: \(path) is protected by a passphrase and none was given "
                    + "(run `vault unlock`, or give the passphrase)",
                path: path)
        }
        // Before the passphrase is asked for: a damaged file, or one that asks for more Argon2id work
        // than the ceiling, is refused without a prompt and without the work.
        try WrappedMasterKey.check(bytes, path: path, ceiling: source.costCeiling)
        let passphrase: SecureBytes
        do {
            passphrase = try provider("passphrase for \(path)")
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.locked, "the vault at \(vaultPath) is locked: no passphrase (\(error))", path: path)
        }
        return try WrappedMasterKey.unwrap(bytes, passphrase: passphrase, path: path, ceiling: source.costCeiling)
    }

    /// The `always` class key of a passphrase vault, kept plainly so that `Always` items can be read
    /// without unlocking (with the same checks as `master.key`), followed by check values of the other
    /// two class keys (BLAKE2b-128 keyed by each, "vault.class.chk"), so that a key taken from the
    /// unlock cache is known to be this vault's before it is used: 32 + 16 + 16 bytes.
    static let alwaysKeyFileName = "always.key"
    static let alwaysKeyFileByteCount = keyByteCount + 32
    static let checkDomain = KeyDerivation.Domain("vault.class.chk")

    struct AlwaysKeyFile {
        let always: SecureBytes
        let checks: [ProtectionClass: [UInt8]]

        /// Whether `key` is this vault's key of `protectionClass`.
        func verifies(_ key: SecureBytes, _ protectionClass: ProtectionClass) -> Bool {
            guard let expected = checks[protectionClass], let actual = try? checkValue(key) else { return false }
            return expected == actual
        }
    }

    static func checkValue(_ key: SecureBytes) throws -> [UInt8] {
        try KeyDerivation.keyedHash([], key: key, domain: checkDomain, outputByteCount: 16)
    }

    static func loadAlwaysKey(in directory: FileDescriptor, vaultPath: String, name: String = alwaysKeyFileName)
        throws(StoreError) -> AlwaysKeyFile?
    {
        protectProcess()
        let path = vaultPath + "/" + name
        let contents: SecureBytes
        do {
            contents = try read(
                name, in: directory, path: path, ownerMayBeRoot: false,
                sizes: [Int64(alwaysKeyFileByteCount)])
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        do {
            let always = try contents.withUnsafeBytes {
                try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0[0..<32]))
            }
            let tail = contents.withUnsafeBytes { Array($0[32...]) }
            return AlwaysKeyFile(
                always: always,
                checks: [.afterFirstUnlock: Array(tail[0..<16]), .whenUnlocked: Array(tail[16..<32])])
        } catch {
            throw StoreError.crypto(error, "cannot hold the always class key in secure memory")
        }
    }

    static func writeAlwaysKey(
        _ keys: ClassKeys, in directory: FileDescriptor, vaultPath: String, name: String = alwaysKeyFileName
    ) throws(StoreError) {
        guard let afterFirstUnlock = keys.afterFirstUnlock, let whenUnlocked = keys.whenUnlocked else {
            throw StoreError(.locked, "the class keys of \(vaultPath) are not all available")
        }
        do {
            let checks = try checkValue(afterFirstUnlock) + checkValue(whenUnlocked)
            let contents = try SecureBytes(count: alwaysKeyFileByteCount) { buffer in
                keys.always.withUnsafeBytes { buffer.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
                checks.withUnsafeBytes { (buffer.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            }
            try contents.withUnsafeBytes { bytes throws(StoreError) in
                try AtomicFile.replace(name, contents: bytes, in: directory, directoryPath: vaultPath)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.crypto(error, "cannot write \(vaultPath)/\(alwaysKeyFileName)")
        }
    }

    /// The key in `name` of the vault directory when that file holds it plainly (32 bytes); nil for a
    /// wrapped key. Checked as `master.key` is.
    static func readPlain(_ name: String, in directory: FileDescriptor, vaultPath: String) throws(StoreError)
        -> SecureBytes?
    {
        protectProcess()
        let contents = try read(name, in: directory, path: vaultPath + "/" + name, ownerMayBeRoot: false)
        return contents.count == keyByteCount ? contents : nil
    }

    /// Loads an external key file: 32 raw bytes, a regular file (not a symlink), owned by the
    /// effective user or by root (systemd's credentials), not accessible to group or others.
    static func loadExternal(_ path: String) throws(StoreError) -> SecureBytes {
        protectProcess()
        let contents = try read(path, in: .currentWorkingDirectory, path: path, ownerMayBeRoot: true)
        guard contents.count == keyByteCount else {
            throw StoreError(
                .integrity,
                "\(path) is \(contents.count) bytes; an external key file is exactly \(keyByteCount) raw bytes",
                path: path)
        }
        return contents
    }

    /// The new external key file of a rekey, at `path` in an existing directory: a new random key in a
    /// new file (0600, created exclusively and durably: temp file, fsync, hard link, fsync of the
    /// directory), or, when the name exists, the key of the 32-byte key file there, checked as
    /// `loadExternal` checks (a file that group or others can read is refused) and then fsynced with
    /// its directory: a file the operator just wrote may not be on disk yet, and after the switch it
    /// holds the only key. Returns the file's absolute path (for the rekey journal, which recovery
    /// reads from any working directory) and the key.
    static func prepareNewKeyFile(_ path: String) throws(StoreError) -> (path: String, key: SecureBytes) {
        protectProcess()
        let (parent, name) = VaultDirectory.split(VaultDirectory.withoutTrailingSeparators(path))
        guard !name.isEmpty, name != ".", name != ".." else {
            throw StoreError(.invalidName, "\(path) is not a file name; give the path of the new key file")
        }
        let parentFD: FileDescriptor
        let absoluteParent: String
        do {
            parentFD = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(parent)
            absoluteParent = try FileDescriptor.resolvedPath(parent)
        } catch {
            throw StoreError(
                StoreError.system(error, "open", path: parent).code,
                "cannot open \(parent), the directory of the new key file \(path): \(error); it must be an existing "
                    + "directory",
                path: parent, cause: error)
        }
        defer { try? parentFD.close() }
        let absolute = (absoluteParent == "/" ? "" : absoluteParent) + "/" + name
        let key = try randomKey()
        do {
            try key.withUnsafeBytes { bytes throws(StoreError) in
                try AtomicFile.createExclusively(name, contents: bytes, in: parentFD, directoryPath: parent)
            }
            return (absolute, key)
        } catch  where error.errno == .fileExists {
            // The operator's own key file: used as it is, once it passes the checks of a key file.
        }
        let existing = try read(name, in: parentFD, path: path, ownerMayBeRoot: true, sizes: [Int64(keyByteCount)])
        do {
            let fd = try parentFD.openAt(name, [.readOnly, .nonBlocking])
            defer { try? fd.close() }
            try fd.sync()
            try parentFD.sync()
        } catch {
            throw StoreError.system(error, "fsync", path: path)
        }
        return (absolute, existing)
    }

    /// Reads a key file into secure memory after checking it, both by name and once opened (the name
    /// could be swapped in between).
    private static func read(
        _ name: String, in directory: FileDescriptor, path: String, ownerMayBeRoot: Bool,
        sizes: Set<Int64> = [Int64(keyByteCount), Int64(WrappedMasterKey.byteCount)]
    )
        throws(StoreError) -> SecureBytes
    {
        let status: FileStatus
        do {
            status = try directory.statusAt(name)
        } catch {
            throw StoreError.system(error, "inspect", path: path)
        }
        try check(status, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes)
        let fd: FileDescriptor
        do {
            // Non-blocking: the name may have been swapped for a FIFO since the check.
            fd = try directory.openAt(name, [.readOnly, .nonBlocking])
        } catch {
            throw StoreError.system(error, "open", path: path)
        }
        defer { try? fd.close() }
        let opened: FileStatus
        do {
            opened = try fd.status()
        } catch {
            throw StoreError.system(error, "inspect", path: path)
        }
        guard opened.inode == status.inode, opened.device == status.device else {
            throw StoreError(.insecureFile, "\(path) changed while it was being opened; try again", path: path)
        }
        try check(opened, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes)
        let size = Int(opened.size)
        do {
            return try SecureBytes(count: size) { buffer in
                var offset = 0
                while offset < size {
                    let n = try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
                    if n == 0 {
                        throw StoreError(.integrity, "\(path) shrank while it was being read; try again", path: path)
                    }
                    offset += n
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as Errno {
            throw StoreError.system(error, "read", path: path)
        } catch {
            throw StoreError.crypto(error, "cannot hold the master key in secure memory")
        }
    }

    private static func check(_ status: FileStatus, path: String, ownerMayBeRoot: Bool, sizes: Set<Int64>)
        throws(StoreError)
    {
        switch status.kind {
        case .regular: break
        case .symbolicLink:
            throw StoreError(
                .insecureFile,
                "\(path) is a symbolic link; vault refuses it (replace it with the key file itself, mode 0600)",
                path: path)
        default:
            throw StoreError(
                .insecureFile,
                "\(path) is \(status.kindDescription), not a regular file; vault needs a key file there (mode 0600)",
                path: path)
        }
        let euid = ProcessIdentity.effectiveUserID
        guard status.ownerID == euid || (ownerMayBeRoot && status.ownerID == 0) else {
            throw StoreError(
                .insecureFile,
                "\(path) is owned by uid \(status.ownerID), not by the user running vault (uid \(euid)); "
                    + (ownerMayBeRoot
                        ? "give this user its own copy (a systemd credential: LoadCredential=), or "
                            + VaultLocation.runAsOwnerAdvice(status.ownerID)
                        : VaultLocation.runAsOwnerAdvice(status.ownerID)),
                path: path)
        }
        guard status.permissions.intersection(.groupOrOtherAny).isEmpty else {
            throw StoreError(
                .insecureFile,
                "\(path) is accessible by group or others (mode \(status.permissions)); run `chmod 600 \(path)`",
                path: path)
        }
        guard sizes.contains(status.size) else {
            if !sizes.contains(Int64(WrappedMasterKey.byteCount)) && !sizes.contains(Int64(alwaysKeyFileByteCount)) {
                throw StoreError(
                    .integrity,
                    "\(path) is \(status.size) bytes; a key file is exactly \(keyByteCount) raw bytes (make one with "
                        + "`(umask 077 && head -c \(keyByteCount) /dev/urandom > FILE)`)",
                    path: path)
            }
            throw StoreError(
                .integrity,
                "\(path) is \(status.size) bytes; a master key file is exactly \(keyByteCount) bytes (or "
                    + "\(WrappedMasterKey.byteCount) when wrapped by a passphrase). It is damaged or not a vault "
                    + "key; restore it from a backup",
                path: path)
        }
    }

    /// Makes a new random master key and stores it as `source` says: in a new external key file (or
    /// taken from an existing one), or as `master.key`, wrapped when a passphrase provider is given.
    /// New files are written atomically and exclusively (temp file, fsync, hard link to the final name,
    /// which fails if the name exists), so of two concurrent inits exactly one wins and no reader ever
    /// sees a half-written key.
    static func create(in directory: FileDescriptor, vaultPath: String, source: KeySource) throws(StoreError)
        -> SecureBytes
    {
        protectProcess()
        if let keyFile = source.keyFile {
            if let key = source.loadedKey { return key }
            return try loadOrCreateExternal(keyFile)
        }
        let key = try randomKey()
        let path = vaultPath + "/" + fileName
        var contents: [UInt8]?
        if let provider = source.passphrase {
            let passphrase: SecureBytes
            do {
                passphrase = try provider("new passphrase for \(path)")
            } catch let error as StoreError {
                throw error
            } catch {
                throw StoreError(.locked, "no passphrase for the new vault at \(vaultPath) (\(error))", path: path)
            }
            contents = try WrappedMasterKey.wrap(key, passphrase: passphrase, limits: source.limits)
        }
        do {
            if let contents {
                try contents.withStoreBytes { bytes throws(StoreError) in
                    try AtomicFile.createExclusively(fileName, contents: bytes, in: directory, directoryPath: vaultPath)
                }
            } else {
                try key.withUnsafeBytes { bytes throws(StoreError) in
                    try AtomicFile.createExclusively(fileName, contents: bytes, in: directory, directoryPath: vaultPath)
                }
            }
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; another init created this vault first", path: path,
                cause: error.cause)
        }
        return key
    }

    /// The external key file `keyFile`, read when it exists, else created: 32 random bytes, written
    /// exclusively and durably (0600) into its directory, which must exist (a missing one is named,
    /// with the command that makes it).
    static func loadOrCreateExternal(_ keyFile: String) throws(StoreError) -> SecureBytes {
        protectProcess()
        do {
            if (try? FileDescriptor.currentWorkingDirectory.statusAt(keyFile)) != nil {
                return try loadExternal(keyFile)
            }
            let key = try randomKey()
            let (parent, name) = VaultDirectory.split(keyFile)
            let parentFD: FileDescriptor
            do {
                parentFD = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(parent)
            } catch {
                if error == .noSuchFileOrDirectory {
                    throw StoreError(
                        .vaultNotFound,
                        "the directory \(parent) of the key file \(keyFile) does not exist; make it first: "
                            + "`install -d -m 0700 \(parent)`",
                        path: parent, cause: error)
                }
                throw StoreError.system(error, "open the directory of the key file", path: parent)
            }
            defer { try? parentFD.close() }
            try key.withUnsafeBytes { bytes throws(StoreError) in
                try AtomicFile.createExclusively(name, contents: bytes, in: parentFD, directoryPath: parent)
            }
            return key
        }
    }

    /// Replaces `master.key` with `key` wrapped under `passphrase` (or plain when it is nil):
    /// atomically (temp file, fsync, rename, fsync of the directory), so a crash leaves the old file or
    /// the new one, never neither.
    static func rewrite(
        _ key: SecureBytes, passphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits,
        in directory: FileDescriptor, vaultPath: String, name: String = fileName
    ) throws(StoreError) {
        if let passphrase {
            let contents = try WrappedMasterKey.wrap(key, passphrase: passphrase, limits: limits)
            try contents.withStoreBytes { bytes throws(StoreError) in
                try AtomicFile.replace(name, contents: bytes, in: directory, directoryPath: vaultPath)
            }
        } else {
            try key.withUnsafeBytes { bytes throws(StoreError) in
                try AtomicFile.replace(name, contents: bytes, in: directory, directoryPath: vaultPath)
            }
        }
    }

    private static func randomKey() throws(StoreError) -> SecureBytes {
        do {
            return try SecureBytes.random(count: keyByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a master key")
        }
    }
}
