import VaultCrypto
import VaultSystem

/// The master key's file: `<vault>/master.key` holding the 32-byte key plainly (the key-file mode of
/// systemd's `credential.secret`) or wrapped under a passphrase (`WrappedMasterKey`), or an external
/// key file (`ExternalKeyFile`: a systemd credential, `--key-file`). Loading refuses, naming the file
/// and the fix, any file that others could read or replace (`KeyFile`).
enum MasterKeyFile {
    static let fileName = "master.key"

    /// What a key file holds: the key itself, or the key wrapped under a passphrase.
    enum Contents {
        case key(SymmetricKey)
        case wrapped([UInt8], path: FilePath)
    }

    /// Reads the master key's file as `source` says: the external key file if there is one, else
    /// `master.key` in `directory` (the vault directory, opened). A wrapped key is returned as such.
    static func read(in directory: FileDescriptor, vaultPath: FilePath, source: KeySource) throws(StoreError)
        -> Contents
    {
        try read(in: directory, vaultPath: vaultPath, source: source, deriving: []).contents
    }

    /// `read`; when `master.key` holds the key plainly, the keys `derivations` ask for (keyed by it as
    /// `ofEarlier: 0`) are made in its secure allocation and come after it. Otherwise (an external key
    /// file, a wrapped key) none are made: the caller derives them.
    static func read(
        in directory: FileDescriptor, vaultPath: FilePath, source: KeySource,
        deriving derivations: [KeyDerivation.Derivation]
    ) throws(StoreError) -> (contents: Contents, derived: ArraySlice<SymmetricKey>) {
        KeyFile.protectProcess()
        if let keyFile = source.keyFile {
            if let key = source.loadedKey { return (.key(key), []) }
            return (.key(try ExternalKeyFile.load(keyFile)), [])
        }
        let path = vaultPath / fileName
        let contents: KeyFile.KeyContents
        do {
            contents = try KeyFile.readKey(
                fileName, in: directory, path: path, ownerMayBeRoot: false, deriving: derivations)
        } catch  where error.errno == .noSuchFileOrDirectory {
            // The vault is there; its key is not: that is "locked", never "no vault" or "not found".
            throw StoreError(
                .locked,
                "\(path) is missing: the vault's key is not in it. If the vault was created with an external key "
                    + "file, give it with --key-file PATH or VAULT_KEY_FILE (or run the service with "
                    + "LoadCredential=\(KeySource.credentialName):…); otherwise restore master.key from a backup",
                path: path.string, cause: error.cause)
        }
        switch contents {
        case .keys(let keys): return (.key(keys[0]), keys.dropFirst())
        case .wrapped(let bytes): return (.wrapped(bytes, path: path), [])
        }
    }

    /// Asks `source` for the passphrase and unwraps. No provider, or one that cannot ask (no
    /// terminal), is `locked`; a wrong passphrase is `wrongPassphrase`.
    static func unwrap(_ bytes: [UInt8], path: FilePath, vaultPath: FilePath, source: KeySource) throws(StoreError)
        -> SymmetricKey
    {
        guard source.passphrase != nil else {
            throw StoreError(
                .locked,
                "the vault at \(vaultPath) is locked: \(path) is protected by a passphrase and none was given "
                    + "(run `vault unlock`, or give the passphrase)",
                path: path.string)
        }
        // Before the passphrase is asked for: a damaged file, or one that asks for more Argon2id work
        // than the ceiling, is refused without a prompt and without the work.
        try WrappedMasterKey.check(bytes, path: path, ceiling: source.costCeiling)
        guard let passphrase = try source.askPassphrase(PassphraseRequest(.unlock, for: path.string)) else {
            throw StoreError(.locked, "the vault at \(vaultPath) is locked", path: path.string)
        }
        return try WrappedMasterKey.unwrap(bytes, passphrase: passphrase, path: path, ceiling: source.costCeiling)
    }

    /// The key in `name` of the vault directory when that file holds it plainly (32 bytes); nil for a
    /// wrapped key. Checked as `master.key` is.
    static func readPlain(_ name: String, in directory: FileDescriptor, vaultPath: FilePath) throws(StoreError)
        -> SymmetricKey?
    {
        KeyFile.protectProcess()
        let path = vaultPath / name
        let contents = try KeyFile.read(name, in: directory, path: path, ownerMayBeRoot: false)
        return contents.count == SymmetricKey.byteCount ? try KeyFile.key(contents, path: path) : nil
    }

    /// Makes a new random master key and stores it as `source` says: in a new external key file (or
    /// taken from an existing one), or as `master.key`, wrapped when a passphrase provider is given.
    /// New files are written atomically and exclusively (temp file, fsync, hard link to the final name,
    /// which fails if the name exists), so of two concurrent inits exactly one wins and no reader ever
    /// sees a half-written key.
    static func create(in directory: FileDescriptor, vaultPath: FilePath, source: KeySource) throws(StoreError)
        -> SymmetricKey
    {
        KeyFile.protectProcess()
        if let keyFile = source.keyFile {
            if let key = source.loadedKey { return key }
            return try ExternalKeyFile.loadOrCreate(keyFile)
        }
        let key = try KeyFile.randomKey()
        let path = vaultPath / fileName
        var contents = FileContents.secret(key.bytes)
        if let passphrase = try source.askPassphrase(PassphraseRequest(.newPassphrase, for: path.string)) {
            contents = .plain(try WrappedMasterKey.wrap(key, passphrase: passphrase, limits: source.limits))
        }
        do {
            try AtomicFile.createExclusively(fileName, contents: contents, in: directory, directoryPath: vaultPath)
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; another init created this vault first",
                path: path.string, cause: error.cause)
        }
        return key
    }

    /// Replaces `master.key` (or `name`) with `key` wrapped under `passphrase` (or plain when it is
    /// nil): atomically (temp file, fsync, rename, fsync of the directory), so a crash leaves the old
    /// file or the new one, never neither.
    static func rewrite(
        _ key: SymmetricKey, passphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits,
        in directory: FileDescriptor, vaultPath: FilePath, name: String = fileName
    ) throws(StoreError) {
        let contents: FileContents
        if let passphrase {
            contents = .plain(try WrappedMasterKey.wrap(key, passphrase: passphrase, limits: limits))
        } else {
            contents = .secret(key.bytes)
        }
        try AtomicFile.replace(name, contents: contents, in: directory, directoryPath: vaultPath)
    }
}
