import VaultCrypto
import VaultSystem

/// `master.key`: the vault's 32-byte master key, stored plainly in a file only its owner can read (the
/// key-file mode of systemd's `credential.secret`). Opening refuses, naming the file and the fix, any
/// file that others could read or replace.
enum MasterKeyFile {
    static let fileName = "master.key"
    static let keyByteCount = 32

    /// Once a key is in memory, the process may no longer be dumped or ptrace-attached by the same
    /// user (`PR_SET_DUMPABLE` 0): a core file or a debugger would otherwise get the key despite
    /// `MADV_DONTDUMP` (ptrace reads any page). Called before the key is read. A failure is ignored:
    /// prctl cannot fail for this argument, and refusing to open a vault over it would help nobody.
    static func protectProcess() {
        try? ProcessIdentity.disableDumps()
    }

    /// Reads and checks the key file in `directory` (the vault directory, opened).
    static func load(in directory: FileDescriptor, vaultPath: String) throws(StoreError) -> SecureBytes {
        protectProcess()
        let path = vaultPath + "/" + fileName
        let status: FileStatus
        do {
            status = try directory.statusAt(fileName)
        } catch {
            if error == .noSuchFileOrDirectory {
                throw StoreError(
                    .vaultNotFound, "\(path) is missing; the vault has no key (restore it from a backup)", path: path,
                    cause: error)
            }
            throw StoreError.system(error, "inspect", path: path)
        }
        try check(status, path: path)
        let fd: FileDescriptor
        do {
            fd = try directory.openAt(fileName, .readOnly)
        } catch {
            throw StoreError.system(error, "open", path: path)
        }
        defer { try? fd.close() }
        // Check the opened file too: the name could have been swapped between fstatat and open.
        do {
            let opened = try fd.status()
            guard opened.inode == status.inode, opened.device == status.device else {
                throw StoreError(.insecureFile, "\(path) changed while it was being opened; try again", path: path)
            }
            try check(opened, path: path)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.system(error as! Errno, "inspect", path: path)
        }
        do {
            return try SecureBytes(count: keyByteCount) { buffer in
                var offset = 0
                while offset < keyByteCount {
                    let n = try fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...]))
                    if n == 0 {
                        throw StoreError(
                            .integrity, "\(path) is shorter than \(keyByteCount) bytes; it is damaged", path: path)
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

    private static func check(_ status: FileStatus, path: String) throws(StoreError) {
        switch status.kind {
        case .regular: break
        case .symbolicLink:
            throw StoreError(
                .insecureFile,
                "\(path) is a symbolic link; vault refuses it (replace it with the key file itself, mode 0600)",
                path: path)
        default:
            throw StoreError(
                .insecureFile, "\(path) is not a regular file; vault needs a key file there (mode 0600)", path: path)
        }
        let euid = ProcessIdentity.effectiveUserID
        guard status.ownerID == euid else {
            throw StoreError(
                .insecureFile,
                "\(path) is owned by uid \(status.ownerID), not by the user running vault (uid \(euid)); "
                    + "run `chown \(euid) \(path)` or run vault as its owner",
                path: path)
        }
        guard status.permissions.intersection(.groupOrOtherAny).isEmpty else {
            throw StoreError(
                .insecureFile,
                "\(path) is accessible by group or others (mode \(status.permissions)); run `chmod 600 \(path)`",
                path: path)
        }
        guard status.size == Int64(keyByteCount) else {
            throw StoreError(
                .integrity,
                "\(path) is \(status.size) bytes; a master key file is exactly \(keyByteCount) bytes. "
                    + "It is damaged or not a vault key; restore it from a backup",
                path: path)
        }
    }

    /// Writes a new random key as `master.key`, atomically and exclusively: the key goes to a temp
    /// file that is fsynced and then hard-linked to the final name, which fails if the name exists. So
    /// of two concurrent inits exactly one wins, and no reader can ever see a half-written key.
    static func create(in directory: FileDescriptor, vaultPath: String) throws(StoreError) -> SecureBytes {
        protectProcess()
        let key: SecureBytes
        do {
            key = try SecureBytes.random(count: keyByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot make a master key")
        }
        let path = vaultPath + "/" + fileName
        do {
            try key.withUnsafeBytes { bytes throws(StoreError) in
                try AtomicFile.createExclusively(
                    fileName, contents: bytes, in: directory, directoryPath: vaultPath,
                    permissions: .ownerReadWrite)
            }
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; another init created this vault first", path: path,
                cause: error.cause)
        }
        return key
    }
}
