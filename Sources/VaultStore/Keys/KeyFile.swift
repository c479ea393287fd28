import VaultCrypto
import VaultSystem

/// Reading a key file (`master.key`, `always.key`, an external key file) into secure memory, and a file
/// that holds keys only sealed (`classes.key`, a wrapped `master.key`) into ordinary memory, refusing,
/// with the file and the fix named, any file that others could read or replace: checked by name and
/// again once opened (the name could be swapped in between).
enum KeyFile {
    /// The sizes a key file of the vault may have: a plain key or a wrapped one.
    static let vaultKeySizes: Set<Int64> = [Int64(SymmetricKey.byteCount), Int64(WrappedMasterKey.byteCount)]

    /// Once a key is in memory, the process may no longer be dumped or ptrace-attached by the same
    /// user (`PR_SET_DUMPABLE` 0): a core file or a debugger would otherwise get the key despite
    /// `MADV_DONTDUMP` (ptrace reads any page). Called before a key is read. A failure is ignored:
    /// prctl cannot fail for this argument, and refusing to open a vault over it would help nobody.
    static func protectProcess() {
        try? ProcessIdentity.disableDumps()
    }

    /// `read`, or nil when there is no file `name`.
    static func readIfPresent(
        _ name: String, in directory: FileDescriptor, path: FilePath, ownerMayBeRoot: Bool, sizes: Set<Int64>
    ) throws(StoreError) -> SecureBytes? {
        try ifPresent { () throws(StoreError) in
            try read(name, in: directory, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes)
        }
    }

    /// The contents of file `name` of sealed keys (`classes.key`) after a key file's checks, nil when
    /// there is none: sealed, they are not secret, so they are read into ordinary memory.
    static func readSealedIfPresent(_ name: String, in directory: FileDescriptor, path: FilePath, sizes: Set<Int64>)
        throws(StoreError) -> [UInt8]?
    {
        try ifPresent { () throws(StoreError) in
            try withChecked(name, in: directory, path: path, ownerMayBeRoot: false, sizes: sizes) {
                (fd, count) throws(StoreError) in try readSealed(fd, count: count, path: path)
            }
        }
    }

    /// What `read` gives, or nil when the file is not there.
    private static func ifPresent<R>(_ read: () throws(StoreError) -> R) throws(StoreError) -> R? {
        do {
            return try read()
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// The contents of key file `name` in `directory` (named `path` in messages), after the checks.
    static func read(
        _ name: String, in directory: FileDescriptor, path: FilePath, ownerMayBeRoot: Bool,
        sizes: Set<Int64> = vaultKeySizes
    ) throws(StoreError) -> SecureBytes {
        try withChecked(name, in: directory, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes) {
            (fd, count) throws(StoreError) in try readSecret(fd, count: count, path: path)
        }
    }

    /// What `readKey` found: a plain key, first in one secure allocation with the keys derived after
    /// it, or a wrapped key (sealed under a passphrase: not secret, in ordinary memory).
    enum KeyContents {
        case keys([SymmetricKey])
        case wrapped([UInt8])
    }

    /// `read`, with `derivations` (keyed by the file's key as `ofEarlier: 0`) made in the same secure
    /// allocation when the file holds a key plainly (`SymmetricKey.byteCount` bytes): one allocation
    /// for the master key and the keys made from it, not one each.
    static func readKey(
        _ name: String, in directory: FileDescriptor, path: FilePath, ownerMayBeRoot: Bool,
        deriving derivations: [KeyDerivation.Derivation]
    ) throws(StoreError) -> KeyContents {
        try withChecked(name, in: directory, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: vaultKeySizes) {
            (fd, count) throws(StoreError) in
            guard count == SymmetricKey.byteCount else { return .wrapped(try readSealed(fd, count: count, path: path)) }
            return .keys(try readKey(fd, path: path, deriving: derivations))
        }
    }

    /// Opens key file `name` after the checks by name and again once opened, and gives `body` the
    /// descriptor and the size it checked; closed when `body` returns.
    private static func withChecked<R>(
        _ name: String, in directory: FileDescriptor, path: FilePath, ownerMayBeRoot: Bool, sizes: Set<Int64>,
        _ body: (FileDescriptor, Int) throws(StoreError) -> R
    ) throws(StoreError) -> R {
        let status: FileStatus
        do {
            status = try directory.statusAt(name)
        } catch {
            throw StoreError.system(error, .stat, "inspect", path: path)
        }
        try check(status, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes)
        let fd: FileDescriptor
        do {
            // Non-blocking: the name may have been swapped for a FIFO since the check.
            fd = try directory.openAt(name, [.readOnly, .nonBlocking])
        } catch {
            throw StoreError.system(error, .open, "open", path: path)
        }
        defer { try? fd.close() }
        let opened: FileStatus
        do {
            opened = try fd.status()
        } catch {
            throw StoreError.system(error, .stat, "inspect", path: path)
        }
        guard opened.inode == status.inode, opened.device == status.device else {
            throw StoreError(.insecureFile, "\(path) changed while it was being opened; try again", path: path.string)
        }
        try check(opened, path: path, ownerMayBeRoot: ownerMayBeRoot, sizes: sizes)
        return try body(fd, Int(opened.size))
    }

    /// Reads a `SymmetricKey.byteCount`-byte key from `fd` and derives `derivations` after it, in one
    /// secure allocation (`KeyDerivation.key(filledBy:thenDeriving:)`).
    private static func readKey(_ fd: FileDescriptor, path: FilePath, deriving derivations: [KeyDerivation.Derivation])
        throws(StoreError) -> [SymmetricKey]
    {
        let count = SymmetricKey.byteCount
        do throws(KeyDerivation.SeededKeyError<ReadFailure>) {
            return try KeyDerivation.key(
                filledBy: { (span) throws(ReadFailure) -> Int in try fill(&span, from: fd, count: count) },
                thenDeriving: derivations)
        } catch {
            switch error {
            case .crypto(let error):
                throw StoreError.crypto(error, "cannot hold the master key and the keys made from it in secure memory")
            case .seed(let failure): throw failure.storeError(path: path)
            }
        }
    }

    /// Fills `span` from `fd`; `shrank` when the file ends before `count` bytes. Returns the count.
    private static func fill(_ span: inout MutableRawSpan, from fd: FileDescriptor, count: Int) throws(ReadFailure)
        -> Int
    {
        let filled: Int
        do throws(Errno) {
            filled = try fd.read(filling: &span)
        } catch {
            throw .system(error)
        }
        if filled < count { throw .shrank }
        return filled
    }

    /// Why reading a key file into secure memory failed.
    private enum ReadFailure: Error {
        case system(Errno)
        case shrank

        func storeError(path: FilePath) -> StoreError {
            switch self {
            case .system(let error): return StoreError.system(error, .read, "read", path: path)
            case .shrank:
                return StoreError(.integrity, "\(path) shrank while it was being read; try again", path: path.string)
            }
        }
    }

    /// Reads exactly `count` bytes of `fd` into ordinary memory: for sealed contents.
    private static func readSealed(_ fd: FileDescriptor, count: Int, path: FilePath) throws(StoreError) -> [UInt8] {
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try fd.read(upTo: count)
        } catch {
            throw ReadFailure.system(error).storeError(path: path)
        }
        guard bytes.count == count else { throw ReadFailure.shrank.storeError(path: path) }
        return bytes
    }

    /// Reads exactly `count` bytes of `fd` into secure memory.
    private static func readSecret(_ fd: FileDescriptor, count: Int, path: FilePath) throws(StoreError) -> SecureBytes {
        do throws(SecureFillError<ReadFailure>) {
            return try SecureBytes(count: count) { (span) throws(ReadFailure) in
                _ = try fill(&span, from: fd, count: count)
            }
        } catch {
            switch error {
            case .allocation(let error):
                throw StoreError.crypto(error, "cannot hold the master key in secure memory")
            case .filling(let failure): throw failure.storeError(path: path)
            }
        }
    }

    private static func check(_ status: FileStatus, path: FilePath, ownerMayBeRoot: Bool, sizes: Set<Int64>)
        throws(StoreError)
    {
        switch status.kind {
        case .regular: break
        case .symbolicLink:
            throw StoreError(
                .insecureFile,
                "\(path) is a symbolic link; vault refuses it (replace it with the key file itself, mode 0600)",
                path: path.string)
        default:
            throw StoreError(
                .insecureFile,
                "\(path) is \(status.kindDescription), not a regular file; vault needs a key file there (mode 0600)",
                path: path.string)
        }
        try FileOwnership.requireOwner(status, rootMayOwn: ownerMayBeRoot, path: path) { owner, user in
            let advice = VaultLocation.runAsOwnerAdvice(owner)
            return "\(path) is owned by uid \(owner), not by the user running vault (uid \(user)); "
                + (ownerMayBeRoot ? "give this user its own copy (a systemd credential: LoadCredential=), or " : "")
                + advice
        }
        try FileOwnership.requireMode(status, without: .groupOrOtherAny, path: path) { mode in
            "\(path) is accessible by group or others (mode \(mode)); run `chmod 600 \(path)`"
        }
        guard sizes.contains(status.size) else {
            let keyByteCount = SymmetricKey.byteCount
            if !sizes.contains(Int64(keyByteCount)) {
                // A file of sealed keys (`classes.key`): no one makes it by hand.
                let expected = sizes.sorted().map(String.init).joined(separator: " or ")
                throw StoreError(
                    .integrity,
                    "\(path) is \(status.size) bytes, not \(expected): it is damaged; restore it from a backup",
                    path: path.string)
            }
            if !sizes.contains(Int64(WrappedMasterKey.byteCount)) && !sizes.contains(Int64(AlwaysKeyFile.byteCount)) {
                throw StoreError(
                    .integrity,
                    "\(path) is \(status.size) bytes; a key file is exactly \(keyByteCount) raw bytes (make one with "
                        + "`(umask 077 && head -c \(keyByteCount) /dev/urandom > FILE)`)",
                    path: path.string)
            }
            throw StoreError(
                .integrity,
                "\(path) is \(status.size) bytes; a master key file is exactly \(keyByteCount) bytes (or "
                    + "\(WrappedMasterKey.byteCount) when wrapped by a passphrase). It is damaged or not a vault "
                    + "key; restore it from a backup",
                path: path.string)
        }
    }

    /// A new random key.
    static func randomKey() throws(StoreError) -> SymmetricKey {
        do {
            return try SymmetricKey.random()
        } catch {
            throw StoreError.crypto(error, "cannot make a master key")
        }
    }

    /// `bytes` as a key; the caller checked the size.
    static func key(_ bytes: SecureBytes, path: FilePath) throws(StoreError) -> SymmetricKey {
        do {
            return try SymmetricKey(bytes)
        } catch {
            throw StoreError(
                .integrity, "\(path) does not hold a \(SymmetricKey.byteCount)-byte key", path: path.string)
        }
    }
}
