import Synchronization
import VaultCrypto
import VaultSystem

/// An open vault directory: the master key, the vault id, and encrypted item files grouped by access
/// group. It stores opaque plaintexts under item ids; what an item means is the business of the layer
/// above. Reads take no lock (renames are atomic); every mutation runs inside `withWriteLock`.
///
/// Layout: `VAULT` (marker), `master.key`, `.lock`, `groups/<group>/<item-id>.item`.
public final class VaultStore: Sendable {
    /// The vault directory as given.
    public let path: String
    /// The vault's 16-byte id from its marker.
    public let vaultID: [UInt8]

    let directory: FileDescriptor
    let groupsDirectory: FileDescriptor
    /// The open `.lock` and the process that opened it. A forked child inherits the descriptor, and
    /// with it the parent's open file description and OFD lock: both would "hold" the lock at once
    /// and write through the same spare. So a child opens `.lock` anew before its first write.
    private let lock: Mutex<(file: FileDescriptor, processID: Int32)>
    let classKeys: ClassKeys
    /// The master key, when this process has it (a key file, or the passphrase); not when the vault
    /// was opened with only the `always` key and cached class keys.
    var masterKey: SecureBytes? { classKeys.master }

    private struct State {
        var groupDirectories: [GroupName: FileDescriptor] = [:]
        var groupKeys: [GroupName: GroupKeys] = [:]
        var cleanedGroups: Set<GroupName> = []
        var cleanedVaultDirectory = false
        var bulkLoading = false
        /// In the current transaction, a write through a spare failed or the spares could not be
        /// removed: a spare may be an item's file on disk. No spare is used until the next writer has
        /// removed them all (the transaction leaves `WriterMark.sparesUntrusted`).
        var spareUntrusted = false
    }
    private let state = Mutex(State())
    /// Serialises this process's writers; the OFD lock on `.lock` serialises processes.
    private let writerMutex = Mutex(())

    static let lockFileName = ".lock"
    static let groupsDirectoryName = "groups"

    private init(
        path: String, vaultID: [UInt8], directory: FileDescriptor, groupsDirectory: FileDescriptor,
        lockFile: FileDescriptor, classKeys: ClassKeys
    ) {
        self.path = path
        self.vaultID = vaultID
        self.directory = directory
        self.groupsDirectory = groupsDirectory
        self.lock = Mutex((lockFile, ProcessIdentity.processID))
        self.classKeys = classKeys
    }

    deinit {
        let fds = state.withLock { Array($0.groupDirectories.values) }
        for fd in fds { try? fd.close() }
        try? lock.withLock { $0.file }.close()
        try? groupsDirectory.close()
        try? directory.close()
    }

    // MARK: Creating and opening

    /// Creates a new vault at `path`: the directory (0700, and missing parents), `.lock`, `master.key`
    /// (0600, 32 random bytes), `groups/` and, last, the `VAULT` marker, each durable, all while holding
    /// the lock on `.lock`. Refuses with `vaultAlreadyExists` when a vault is there; nothing is
    /// overwritten. An init that was interrupted after `master.key` was written (its creator died: it
    /// no longer holds the lock) is completed with that key. `keySource` chooses where the new key
    /// goes: `master.key` (plain, or wrapped when it has a passphrase provider) or an external key file.
    public static func create(at path: String, keySource: KeySource = KeySource()) throws(StoreError) -> VaultStore {
        try create(at: path, keySource: keySource, openingExisting: false)
    }

    /// Opens the vault at `path`, or creates it when there is none: what many processes starting at
    /// once on a fresh machine may all call. Every caller ends with the same, complete vault: a
    /// creator holds the lock on `.lock` until its marker is written, and the others wait for it.
    /// With an external key file nothing is created (`vaultNotFound`): that takes an explicit `create`.
    public static func openOrCreate(at path: String, keySource: KeySource = KeySource()) throws(StoreError)
        -> VaultStore
    {
        do {
            return try open(at: path, keySource: keySource)
        } catch  where error.code == .vaultNotFound {
            // With an external key, a mistyped path must not get a fresh vault under a production key.
            if let keyFile = keySource.keyFile {
                throw StoreError(
                    .vaultNotFound,
                    "no vault at \(path), and none is created implicitly with the external key file \(keyFile); "
                        + "create it with `vault --vault \(path) init --key-file \(keyFile)`",
                    path: path, cause: error)
            }
            return try create(at: path, keySource: keySource, openingExisting: true)
        }
    }

    private static func create(at path: String, keySource: KeySource, openingExisting: Bool) throws(StoreError)
        -> VaultStore
    {
        try VaultDirectory.prepareForCreate(path)
        let directory = try VaultDirectory.open(path, creating: true)
        let created: VaultStore?
        do {
            created = try build(in: directory, path: path, keySource: keySource, openingExisting: openingExisting)
        } catch {
            try? directory.close()
            throw error
        }
        if let created { return created }
        // Another process made the vault first: open what it made.
        try? directory.close()
        return try open(at: path, keySource: keySource)
    }

    /// Builds the vault in `directory` under the lock on `.lock`; nil when a vault is there already
    /// and `openingExisting` says to open it instead. Takes ownership of `directory` only on success.
    private static func build(
        in directory: FileDescriptor, path: String, keySource: KeySource, openingExisting: Bool
    ) throws(StoreError) -> VaultStore? {
        // The lock file comes first: creators hold it while they build the vault, so one that finds a
        // master.key without a marker while holding the lock knows that its creator died.
        try withVaultLock(directory: directory, path: path) { lockFile throws(StoreError) in
            try build(
                in: directory, path: path, keySource: keySource, openingExisting: openingExisting, lockFile: lockFile)
        }
    }

    /// Runs `body` holding the OFD lock on `.lock` through a descriptor of its own (made when missing),
    /// for the steps that come before a store exists: init and rekey recovery.
    static func withVaultLock<R>(
        directory: FileDescriptor, path: String, _ body: (FileDescriptor) throws(StoreError) -> R
    ) throws(StoreError) -> R {
        let lockFile = try ensureLockFile(in: directory, path: path)
        defer { try? lockFile.close() }
        do {
            try lockFile.lock(.exclusive)
        } catch {
            throw StoreError.system(error, "lock", path: path + "/" + lockFileName)
        }
        defer { try? lockFile.unlock() }
        return try body(lockFile)
    }

    /// The steps of `build`, with the lock held through `lockFile`.
    private static func build(
        in directory: FileDescriptor, path: String, keySource: KeySource, openingExisting: Bool,
        lockFile: FileDescriptor
    ) throws(StoreError) -> VaultStore? {
        if try exists(VaultMarker.fileName, in: directory, path: path) {
            guard openingExisting else {
                throw StoreError(
                    .vaultAlreadyExists, "a vault already exists at \(path); nothing was changed", path: path)
            }
            return nil
        }
        // A new vault's lock file says "idle", or its first writer would take the empty mark for a death.
        // Only here: no writer can hold a vault whose VAULT marker is not written yet.
        if (try? lockFile.status().size) == 0 { WriterMark.idle.write(to: lockFile) }
        // A marker is missing, not an init unfinished, when items are there: a new marker would carry a
        // new vault id, which none of them is bound to (and they would all fail authentication).
        if try holdsItems(directory, path: path) {
            throw StoreError(
                .integrity,
                "\(path)/\(VaultMarker.fileName) is missing but the vault holds items: it is no interrupted init, "
                    + "and a new marker would not match them; restore \(VaultMarker.fileName) from a backup "
                    + "(nothing was changed)",
                path: path + "/" + VaultMarker.fileName)
        }
        let masterKey: SecureBytes
        if keySource.keyFile == nil, try exists(MasterKeyFile.fileName, in: directory, path: path) {
            // A previous init stopped before its marker: finish it with the key it left.
            switch try MasterKeyFile.read(in: directory, vaultPath: path, source: keySource) {
            case .key(let key): masterKey = key
            case .wrapped(let bytes, let keyPath):
                masterKey = try MasterKeyFile.unwrap(bytes, path: keyPath, vaultPath: path, source: keySource)
            }
        } else {
            masterKey = try MasterKeyFile.create(in: directory, vaultPath: path, source: keySource)
        }
        let classKeys = try ClassKeys(master: masterKey)
        if keySource.keyFile == nil, keySource.passphrase != nil {
            try MasterKeyFile.writeAlwaysKey(classKeys, in: directory, vaultPath: path)
        }
        let groups = try ensureGroupsDirectory(in: directory, path: path)
        try? groups.close()
        let marker = try VaultMarker.random()
        let encoded = try marker.encoded(key: classKeys.always)
        try encoded.withStoreBytes { bytes throws(StoreError) in
            try AtomicFile.createExclusively(
                VaultMarker.fileName, contents: bytes, in: directory, directoryPath: path,
                permissions: .ownerReadWrite)
        }
        return try assemble(path: path, directory: directory, markerBytes: encoded, classKeys: classKeys)
    }

    /// Whether any group directory (of `groups`, or of a rekey's `groups.old`/`groups.new`) holds an
    /// item file: then a missing marker is damage, not an unfinished init.
    private static func holdsItems(_ directory: FileDescriptor, path: String) throws(StoreError) -> Bool {
        for name in [groupsDirectoryName, Rekey.oldGroups, Rekey.newGroups] {
            guard let groups = try? directory.openDirectoryAt(name) else { continue }
            defer { try? groups.close() }
            for group in (try? groups.entryNames()) ?? [] {
                guard let fd = try? groups.openDirectoryAt(group) else { continue }
                defer { try? fd.close() }
                if ((try? fd.entryNames()) ?? []).contains(where: { $0.hasSuffix(".item") }) { return true }
            }
        }
        return false
    }

    /// The marker's bytes, or nil when there is no marker.
    private static func readMarker(in directory: FileDescriptor, path markerPath: String) throws(StoreError)
        -> [UInt8]?
    {
        do {
            return try VaultDirectory.readSmallFile(VaultMarker.fileName, in: directory, path: markerPath, limit: 4096)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
    }

    /// Waits until no init holds the lock on `.lock` (an init in progress holds it until its marker is
    /// written); nothing to wait for when there is no lock file.
    private static func waitForInit(directory: FileDescriptor, path: String) throws(StoreError) {
        let lockPath = path + "/" + lockFileName
        let lockFile: FileDescriptor
        do {
            lockFile = try directory.openAt(lockFileName, [.readWrite, .nonBlocking])
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError.system(error, "open the lock file", path: lockPath)
        }
        defer { try? lockFile.close() }
        do {
            try lockFile.lock(.exclusive)
            try lockFile.unlock()
        } catch {
            throw StoreError.system(error, "lock", path: lockPath)
        }
    }

    /// Opens the vault at `path`, checking the directory, the key file and the marker; every refusal
    /// names the file and the fix.
    public static func open(at path: String, keySource: KeySource = KeySource()) throws(StoreError) -> VaultStore {
        let directory = try VaultDirectory.open(path, creating: false)
        do throws(StoreError) {
            let rekeyedTo = try finishInterruptedRekey(directory: directory, path: path, keySource: keySource)
            let markerPath = path + "/" + VaultMarker.fileName
            var found = try readMarker(in: directory, path: markerPath)
            if found == nil {
                // An init may be running: it holds the lock until its marker is written.
                try waitForInit(directory: directory, path: path)
                found = try readMarker(in: directory, path: markerPath)
            }
            guard let markerBytes = found else {
                if try holdsItems(directory, path: path) {
                    throw StoreError(
                        .integrity,
                        "\(markerPath) is missing but the vault at \(path) holds items; restore it from a backup "
                            + "(a new marker would not match them)",
                        path: markerPath)
                }
                if (try? directory.statusAt(MasterKeyFile.fileName)) != nil {
                    throw StoreError(
                        .vaultNotFound,
                        "vault at \(path) is incomplete: \(markerPath) is missing (an init was interrupted); "
                            + "run `vault init` again to finish it",
                        path: markerPath)
                }
                throw StoreError(
                    .vaultNotFound,
                    "no vault at \(path) (no \(VaultMarker.fileName) file); create one with `vault init`",
                    path: path)
            }
            // The version must be checked before the key: a future format may keep its key elsewhere.
            if markerBytes.count >= 5, Array(markerBytes[0..<4]) == VaultMarker.magic,
                markerBytes[4] != VaultMarker.formatVersion
            {
                throw StoreError(
                    .unsupportedFormat,
                    "vault at \(path) has format version \(markerBytes[4]); "
                        + "this build of vault reads version \(VaultMarker.formatVersion)",
                    path: markerPath)
            }
            let classKeys = try loadClassKeys(
                directory: directory, path: path, markerBytes: markerBytes, keySource: keySource)
            do {
                return try assemble(path: path, directory: directory, markerBytes: markerBytes, classKeys: classKeys)
            } catch  where error.code == .integrity && error.path == markerPath {
                // This open finished a rekey to a new key file and was given another key file: say which.
                guard let rekeyedTo, rekeyedTo != keySource.keyFile else { throw error }
                throw StoreError(
                    .locked,
                    "the vault at \(path) was rekeyed to the key file \(rekeyedTo) (this open finished an interrupted "
                        + "`vault rekey --new-key-file`): give --key-file \(rekeyedTo), VAULT_KEY_FILE, or "
                        + "LoadCredential=\(KeySource.credentialName):\(rekeyedTo)",
                    path: markerPath, cause: error)
            }
        } catch {
            try? directory.close()
            throw error
        }
    }

    /// The class keys a process can have: all of them from a key file or a passphrase; in a passphrase
    /// vault opened without one, the `always` key from `always.key` and whatever `vault unlock` cached.
    /// The cache is tried before the passphrase is asked for, so that an unlocked vault asks nothing.
    private static func loadClassKeys(
        directory: FileDescriptor, path: String, markerBytes: [UInt8], keySource: KeySource
    ) throws(StoreError) -> ClassKeys {
        let contents = try MasterKeyFile.read(in: directory, vaultPath: path, source: keySource)
        guard case .wrapped(let wrapped, let keyPath) = contents else {
            guard case .key(let master) = contents else { fatalError("unreachable") }
            return try ClassKeys(master: master)
        }
        let alwaysFile = try MasterKeyFile.loadAlwaysKey(in: directory, vaultPath: path)
        // Cached class keys count only if they are this vault's (a stale or foreign entry is ignored).
        var afterFirstUnlock: SecureBytes?
        var whenUnlocked: SecureBytes?
        if keySource.usesUnlockCache, let alwaysFile, let vaultID = UnlockCache.claimedVaultID(markerBytes) {
            let cached = UnlockCache.read(vaultID: vaultID)
            afterFirstUnlock = cached.afterFirstUnlock.flatMap { alwaysFile.verifies($0, .afterFirstUnlock) ? $0 : nil }
            whenUnlocked = cached.whenUnlocked.flatMap { alwaysFile.verifies($0, .whenUnlocked) ? $0 : nil }
            if let afterFirstUnlock, let whenUnlocked {
                return ClassKeys(
                    always: alwaysFile.always, afterFirstUnlock: afterFirstUnlock, whenUnlocked: whenUnlocked)
            }
        }
        do {
            let master = try MasterKeyFile.unwrap(wrapped, path: keyPath, vaultPath: path, source: keySource)
            return try ClassKeys(master: master)
        } catch  where error.code == .locked && alwaysFile != nil {
            // No passphrase to be had: open locked. `Always` items stay readable; the others say locked.
            return ClassKeys(always: alwaysFile!.always, afterFirstUnlock: afterFirstUnlock, whenUnlocked: whenUnlocked)
        }
    }

    /// Checks the marker against the `always` class key and opens the lock file and the groups
    /// directory. Takes ownership of `directory` only on success.
    private static func assemble(
        path: String, directory: FileDescriptor, markerBytes: [UInt8], classKeys: ClassKeys
    ) throws(StoreError) -> VaultStore {
        let marker = try VaultMarker.decode(
            markerBytes, key: classKeys.always, path: path + "/" + VaultMarker.fileName)
        let lockFile = try ensureLockFile(in: directory, path: path)
        do throws(StoreError) {
            let groups = try ensureGroupsDirectory(in: directory, path: path)
            return VaultStore(
                path: path, vaultID: marker.vaultID, directory: directory, groupsDirectory: groups,
                lockFile: lockFile, classKeys: classKeys)
        } catch {
            try? lockFile.close()
            throw error
        }
    }

    /// Whether `master.key` is wrapped under a passphrase (read now: `passwd` may have changed it).
    public var isPassphraseProtected: Bool {
        (try? directory.statusAt(MasterKeyFile.fileName))?.size == Int64(WrappedMasterKey.byteCount)
    }

    /// Whether this store holds the key of `protectionClass` (always true for a key-file vault).
    public func isAvailable(_ protectionClass: ProtectionClass) -> Bool {
        classKeys.key(protectionClass) != nil
    }

    /// Re-wraps the master key in `master.key` under `newPassphrase` (nil stores it plainly), under the
    /// write lock; the key itself and every item stay as they are. Atomic: a crash leaves the old file
    /// (old passphrase) or the new one. Refused for a vault whose key is in an external key file.
    public func changePassphrase(
        to newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = KeySource()
    ) throws(StoreError) {
        guard keySource.keyFile == nil else {
            throw StoreError(
                .invalidName,
                "the key of the vault at \(path) is in the external file \(keySource.keyFile!); a passphrase "
                    + "protects master.key only")
        }
        guard let masterKey else {
            throw StoreError(
                .locked, "the vault at \(path) was opened without its passphrase; give the current one to change it")
        }
        do {
            try withWriteLock { _ in
                if newPassphrase != nil {
                    // Written first: a crash after it leaves a plain master.key and a harmless always.key.
                    try MasterKeyFile.writeAlwaysKey(classKeys, in: directory, vaultPath: path)
                }
                try MasterKeyFile.rewrite(
                    masterKey, passphrase: newPassphrase, limits: limits, in: directory, vaultPath: path)
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.io, "cannot change the passphrase of \(path): \(error)", path: path)
        }
    }

    @discardableResult
    static func ensureLockFile(in directory: FileDescriptor, path: String) throws(StoreError) -> FileDescriptor {
        let lockPath = path + "/" + lockFileName
        do {
            let fd = try directory.openAt(
                lockFileName, [.readWrite, .create, .nonBlocking], permissions: .ownerReadWrite)
            let status = try fd.status()
            guard status.kind == .regular else {
                try? fd.close()
                throw StoreError(
                    .insecureFile, "\(lockPath) is \(status.kindDescription), not a regular file; vault refuses it",
                    path: lockPath)
            }
            return fd
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError.system(error as! Errno, "open the lock file", path: lockPath)
        }
    }

    @discardableResult
    private static func ensureGroupsDirectory(in directory: FileDescriptor, path: String) throws(StoreError)
        -> FileDescriptor
    {
        let groupsPath = path + "/" + groupsDirectoryName
        do {
            return try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
        } catch  where error.errno == .noSuchFileOrDirectory {
            // A new vault, or one whose groups/ is gone. If a rekey's directories are there instead, an
            // empty groups/ would hide every item: say so, and change nothing.
            for name in [Rekey.oldGroups, Rekey.newGroups] where try exists(name, in: directory, path: path) {
                throw StoreError(
                    .integrity,
                    "\(groupsPath) is missing but \(path)/\(name) exists, and no rekey journal says why (an interrupted "
                        + "rekey keeps one): vault changes nothing; if the items are in \(name), rename it back to "
                        + "\(groupsDirectoryName)",
                    path: groupsPath)
            }
        }
        do {
            try directory.makeDirectoryAt(groupsDirectoryName, permissions: .ownerAll)
            try AtomicFile.syncDirectory(directory, path: path)
        } catch let error as StoreError {
            throw error
        } catch {
            if (error as! Errno) != .fileExists {
                throw StoreError.system(error as! Errno, "create", path: groupsPath)
            }
        }
        return try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
    }

    // MARK: Keys and ids

    func keys(for group: GroupName) throws(StoreError) -> GroupKeys {
        if let keys = state.withLock({ $0.groupKeys[group] }) { return keys }
        let keys = try GroupKeys(classKeys: classKeys, group: group)
        state.withLock { $0.groupKeys[group] = keys }
        return keys
    }

    /// The id of the item whose canonical primary key is `primaryKey` in `group`: a keyed BLAKE2b
    /// under the group's index key, so names reveal nothing and differ between groups.
    public func itemID(group: GroupName, primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        try itemID(primaryKey, indexKey: try keys(for: group).index)
    }

    func itemID(_ primaryKey: [UInt8], indexKey: SecureBytes) throws(StoreError) -> ItemID {
        do {
            let hash = try KeyDerivation.keyedHash(
                primaryKey, key: indexKey, domain: KeyDerivation.Domain("vault.item-id.v1"),
                outputByteCount: ItemID.hashByteCount)
            return ItemID(hash: hash)
        } catch {
            throw StoreError.crypto(error, "cannot compute an item id")
        }
    }

    // MARK: Reading

    func groupPath(_ group: GroupName) -> String {
        path + "/" + Self.groupsDirectoryName + "/" + group.rawValue
    }

    func itemPath(_ group: GroupName, _ id: ItemID) -> String {
        groupPath(group) + "/" + id.fileName
    }

    /// The open directory of `group`, or nil when the group has no directory yet (and `create` is
    /// false).
    func groupDirectory(_ group: GroupName, create: Bool) throws(StoreError) -> FileDescriptor? {
        if let fd = state.withLock({ $0.groupDirectories[group] }) { return fd }
        let groupPath = groupPath(group)
        if create {
            do {
                try groupsDirectory.makeDirectoryAt(group.rawValue, permissions: .ownerAll)
                try AtomicFile.syncDirectory(groupsDirectory, path: path + "/" + Self.groupsDirectoryName)
            } catch let error as StoreError {
                throw error
            } catch {
                if (error as! Errno) != .fileExists {
                    throw StoreError.system(error as! Errno, "create the group directory", path: groupPath)
                }
            }
        }
        let fd: FileDescriptor
        do {
            fd = try VaultDirectory.openSubdirectory(group.rawValue, in: groupsDirectory, path: groupPath)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
        return state.withLock { state in
            if let existing = state.groupDirectories[group] {
                try? fd.close()
                return existing
            }
            state.groupDirectories[group] = fd
            return fd
        }
    }

    /// The directory of `group`, created when missing. The directory can vanish between mkdir and
    /// open (another process renamed or removed it; the symlink-swap harness does that): an error, not
    /// a crash.
    func existingGroupDirectory(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        guard let directory = try groupDirectory(group, create: true) else {
            throw StoreError(
                .io, "the group directory \(groupPath(group)) disappeared while it was being opened; try again",
                path: groupPath(group))
        }
        return directory
    }

    /// Reads and decrypts one item; nil when it does not exist. A file that fails any check is an
    /// `integrity` error naming it, never garbage.
    public func readItem(group: GroupName, id: ItemID) throws(StoreError) -> SecureBytes? {
        try readItem(group: group, id: id) { (contents, key, path) throws(StoreError) in
            try ItemFile.open(contents, key: key, vaultID: vaultID, group: group, id: id, path: path)
        }
    }

    /// Reads and decrypts one item into an ordinary array, for a caller that decodes it at once and
    /// wipes it: no secure-memory allocation on the hot path of every look-up. Nil when it does not
    /// exist.
    public func readItemTransient(group: GroupName, id: ItemID) throws(StoreError) -> TransientBytes? {
        try readItem(group: group, id: id) { (contents, key, path) throws(StoreError) in
            try ItemFile.openTransient(contents, key: key, vaultID: vaultID, group: group, id: id, path: path)
        }
    }

    private func readItem<R>(
        group: GroupName, id: ItemID, open: ([UInt8], SecureBytes, String) throws(StoreError) -> R
    ) throws(StoreError) -> R? {
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let path = itemPath(group, id)
        var failed: (contents: [UInt8], error: StoreError)?
        for attempt in 1...Self.readAttempts {
            let contents: [UInt8]
            var unchanged = false
            do {
                if attempt == 1 {
                    contents = try VaultDirectory.readSmallFile(
                        id.fileName, in: directory, path: path, limit: ItemFile.maximumFileByteCount)
                } else {
                    (contents, unchanged) = try VaultDirectory.readSmallFileConfirmed(
                        id.fileName, in: directory, path: path, limit: ItemFile.maximumFileByteCount)
                }
            } catch  where error.errno == .noSuchFileOrDirectory {
                return nil
            }
            do throws(StoreError) {
                let protectionClass = try ItemFile.protectionClass(of: contents, path: path)
                guard let key = try keys(for: group).encryption(protectionClass) else {
                    throw lockedError(protectionClass, path: path)
                }
                return try open(contents, key, path)
            } catch {
                // A reader takes no lock, so the file it opened may have become the group's spare and be
                // written over (`AtomicFile.spareName`): what it read can be another item's file, zeros,
                // or torn. Such a read is not the file at the name; reading again by name is. A verdict
                // stands when a read found the file at the name unchanged throughout and returned the
                // same bytes as the failed read before it (a damaged file stays damaged).
                let settled = unchanged && contents == failed?.contents
                guard [StoreError.Code.integrity, .locked, .unsupportedFormat].contains(error.code), !settled
                else { throw error }
                failed = (contents, error)
            }
        }
        // Every read failed and the bytes kept changing: report the last failure.
        throw failed!.error
    }

    /// Reads of one item before a failure is reported while its bytes keep changing under the reader.
    static let readAttempts = 8

    func lockedError(_ protectionClass: ProtectionClass, path: String) -> StoreError {
        StoreError(
            .locked,
            "\(path) is protected by class \(protectionClass) and the vault at \(self.path) is locked for it; "
                + "run `vault unlock` (or give the passphrase)",
            path: path)
    }

    /// The groups that have a directory in the vault, sorted.
    public func groups() throws(StoreError) -> [GroupName] {
        let names: [String]
        do {
            names = try groupsDirectory.entryNames()
        } catch {
            throw StoreError.system(error, "list", path: path + "/" + Self.groupsDirectoryName)
        }
        return names.compactMap { try? GroupName($0) }.sorted()
    }

    /// The ids of the items in `group`, sorted; temp files and foreign names are skipped.
    public func itemIDs(in group: GroupName, sorted: Bool = true) throws(StoreError) -> [ItemID] {
        guard let directory = try groupDirectory(group, create: false) else { return [] }
        do {
            let ids = try directory.entryNames().compactMap { ItemID(fileName: $0) }
            return sorted ? ids.sorted() : ids
        } catch {
            throw StoreError.system(error, "list", path: groupPath(group))
        }
    }

    // MARK: Writing

    /// Runs `body` holding the vault's write lock: this process's writer mutex and an exclusive OFD
    /// lock on `.lock`, so that a check-then-act in `body` cannot interleave with any other writer, in
    /// this process or another. The lock is released when `body` returns or throws (or the process
    /// dies).
    public func withWriteLock<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        try writerMutex.withLock { _ in
            let lockFile = try currentLockFile()
            do {
                try lockFile.lock(.exclusive)
            } catch let error as Errno {
                throw StoreError.system(error, "lock", path: path + "/" + Self.lockFileName)
            }
            defer { try? lockFile.unlock() }
            let found = WriterMark.read(lockFile)
            let marked = WriterMark.active.write(to: lockFile)
            // An unreadable mark is taken as a death: the cleanup is what is always safe.
            let previousWriterDied = found == nil || found == .active
            state.withLock { $0.spareUntrusted = false }
            defer { (state.withLock { $0.spareUntrusted } ? WriterMark.sparesUntrusted : .idle).write(to: lockFile) }
            if previousWriterDied {
                // Its temp files may be in any group, and this handle may have cleaned up long ago. Clean
                // every group now: this writer may not write (a delete), and the next writer will not
                // know that anyone died.
                state.withLock { state in
                    state.cleanedGroups = []
                    state.cleanedVaultDirectory = false
                }
                removeStaleTemporaryFilesInEveryGroup()
            }
            // A spare is written in place only when the exchange that made it the spare is durable. After
            // anything but a normal finish, remove every spare first; if that fails, use none and leave
            // the mark for the next writer. A writer that cannot set the mark uses none either: its own
            // death would go unnoticed.
            var reusesSpares = marked
            if found != .idle, !removeEverySpare() {
                reusesSpares = false
                state.withLock { $0.spareUntrusted = true }
            }
            removeStaleTemporaryFilesInVaultDirectory()
            return try body(
                WriteTransaction(store: self, previousWriterDied: previousWriterDied, reusesSpares: reusesSpares))
        }
    }

    /// This process's own open of `.lock`: after a fork, the child's first write opens it anew (see
    /// `lock`), so that parent and child exclude each other like any two processes.
    private func currentLockFile() throws(StoreError) -> FileDescriptor {
        let pid = ProcessIdentity.processID
        if let file = lock.withLock({ $0.processID == pid ? $0.file : nil }) { return file }
        let reopened = try Self.ensureLockFile(in: directory, path: path)
        let inherited = lock.withLock { lock in
            defer { lock = (reopened, pid) }
            return lock.file
        }
        // Closing the inherited copy leaves the parent's lock alone: an OFD lock lives until the last
        // descriptor of its open file description closes, and the parent still has one.
        try? inherited.close()
        return reopened
    }

    /// Encrypts `plaintext` as item `id` of `group` and durably replaces the file. Call within
    /// `withWriteLock` (through `WriteTransaction`).
    /// With `version`, the item's generation record is replaced after the item (removed for
    /// generation 1), before the directory fsync (see `GenerationRecord`).
    /// With `reusingSpare`, a durable write goes through the group's spare file (`AtomicFile.spareName`).
    func writeItem(
        group: GroupName, id: ItemID, plaintext: UnsafeRawBufferPointer, protectionClass: ProtectionClass,
        version: ItemVersion? = nil, reusingSpare: Bool = false
    ) throws(StoreError) {
        guard let key = try keys(for: group).encryption(protectionClass) else {
            throw lockedError(protectionClass, path: itemPath(group, id))
        }
        let directory = try existingGroupDirectory(group)
        try removeStaleTemporaryFiles(group: group, directory: directory)
        let contents = try ItemFile.seal(
            plaintext, key: key, protectionClass: protectionClass, vaultID: vaultID, group: group, id: id)
        let durable = !state.withLock { $0.bulkLoading }
        let directoryPath = groupPath(group)
        // Generation 1 gets no record: no older copy of the item exists to roll back to, and an add then
        // allocates no second inode. A record left there (by a delete whose unlink of it failed, or the
        // `moving` mark of an unfinished move) is removed instead, in the same directory fsync.
        var record: (name: String, text: String?)?
        if let version {
            record = (
                GenerationRecord.name(id),
                version.generation > 1 ? try generationRecordText(group: group, id: id, version: version) : nil
            )
        }
        // After a failed write through a spare, none is used until the next writer has removed them.
        let spare = durable && reusingSpare && !state.withLock { $0.spareUntrusted }
        do {
            try contents.withStoreBytes { bytes throws(StoreError) in
                try AtomicFile.replace(
                    id.fileName, contents: bytes, in: directory, directoryPath: directoryPath, durable: durable,
                    generationRecord: record, reusingSpare: spare)
            }
        } catch {
            if spare { state.withLock { $0.spareUntrusted = true } }
            throw error
        }
    }

    /// Removes item `id` of `group` and its generation record; false when it did not exist.
    func removeItem(group: GroupName, id: ItemID) throws(StoreError) -> Bool {
        guard let directory = try groupDirectory(group, create: false) else { return false }
        return try AtomicFile.remove(
            id.fileName, in: directory, directoryPath: groupPath(group), alsoRemove: GenerationRecord.name(id))
    }

    static func checkNoteName(_ name: String) throws(StoreError) {
        guard name.hasPrefix("."), !name.hasPrefix(AtomicFile.temporaryPrefix),
            !name.hasPrefix(GenerationRecord.prefix), name != AtomicFile.spareName, !name.contains("/"), name.count > 1,
            name != ".."
        else {
            throw StoreError(.invalidName, "\"\(name.debugDescriptionEscaped)\" is not a note name")
        }
    }

    func markMoving(group: GroupName, id: ItemID) throws(StoreError) {
        let directory = try existingGroupDirectory(group)
        try AtomicFile.replaceSymbolicLink(
            GenerationRecord.name(id), target: GenerationRecord.movingText, in: directory,
            directoryPath: groupPath(group))
    }

    func writeNote(group: GroupName, name: String, contents: [UInt8]) throws(StoreError) {
        try Self.checkNoteName(name)
        let directory = try existingGroupDirectory(group)
        try contents.withStoreBytes { bytes throws(StoreError) in
            try AtomicFile.replace(name, contents: bytes, in: directory, directoryPath: groupPath(group))
        }
    }

    func removeNote(group: GroupName, name: String) throws(StoreError) {
        try Self.checkNoteName(name)
        guard let directory = try groupDirectory(group, create: false) else { return }
        _ = try AtomicFile.remove(name, in: directory, directoryPath: groupPath(group))
    }

    /// The contents of note `name` of `group`, or nil when there is none; read without the lock (a
    /// note is replaced atomically), so that readers can consult a writer's recorded intent.
    public func readNote(group: GroupName, name: String) throws(StoreError) -> [UInt8]? {
        try Self.checkNoteName(name)
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        // Notes are rare: a stat (no descriptor to open and close) answers the common case. Any other
        // failure is an error: "no move in progress" must not be guessed.
        do {
            _ = try directory.statusAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StoreError.system(error, "inspect", path: groupPath(group) + "/" + name)
        }
        do {
            return try VaultDirectory.readSmallFile(
                name, in: directory, path: groupPath(group) + "/" + name, limit: 4096)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil
        }
    }

    func notes(group: GroupName, prefix: String) throws(StoreError) -> [(name: String, contents: [UInt8])] {
        guard let directory = try groupDirectory(group, create: false) else { return [] }
        let names: [String]
        do {
            names = try directory.entryNames()
        } catch {
            throw StoreError.system(error, "list", path: groupPath(group))
        }
        var result: [(name: String, contents: [UInt8])] = []
        for name in names.sorted() where name.hasPrefix(prefix) && name.hasPrefix(".") {
            do {
                let contents = try VaultDirectory.readSmallFile(
                    name, in: directory, path: groupPath(group) + "/" + name, limit: 4096)
                result.append((name, contents))
            } catch  where error.errno == .noSuchFileOrDirectory {
                continue
            }
        }
        return result
    }

    /// Runs `body` with per-write fsyncs skipped, then makes everything durable at once with one
    /// `syncfs` of the vault's file system. Writes stay atomic (rename) but are durable only when this
    /// returns; for filling a vault in bulk (benchmarks, imports), never for ordinary writes.
    package func withBulkLoad<R>(_ body: () throws -> R) throws -> R {
        state.withLock { $0.bulkLoading = true }
        defer { state.withLock { $0.bulkLoading = false } }
        let result = try body()
        do {
            try directory.syncFileSystem()
        } catch {
            throw StoreError.system(error, "syncfs", path: path)
        }
        return result
    }

    /// Init leaves a temp file in the vault directory only when even its removal failed; the first
    /// writer of each open store removes such leftovers.
    private func removeStaleTemporaryFilesInVaultDirectory() {
        let first = state.withLock { state in
            defer { state.cleanedVaultDirectory = true }
            return !state.cleanedVaultDirectory
        }
        guard first else { return }
        for name in (try? directory.entryNames()) ?? [] where name.hasPrefix(AtomicFile.temporaryPrefix) {
            try? directory.unlinkAt(name)
        }
    }

    /// Removes the temp files of every group (under the lock, after a writer died).
    private func removeStaleTemporaryFilesInEveryGroup() {
        for group in (try? groups()) ?? [] {
            guard let directory = try? groupDirectory(group, create: false) else { continue }
            try? removeStaleTemporaryFiles(group: group, directory: directory)
        }
    }

    /// Unlinks the spare of every group; false when one may remain (the groups could not be listed, a
    /// group directory not opened, or an unlink failed).
    private func removeEverySpare() -> Bool {
        guard let groups = try? groups() else { return false }
        var removed = true
        for group in groups {
            do {
                guard let directory = try groupDirectory(group, create: false) else { continue }
                try directory.unlinkAt(AtomicFile.spareName)
            } catch let error as Errno where error == .noSuchFileOrDirectory {
                continue
            } catch {
                removed = false
            }
        }
        return removed
    }

    /// Temp files exist only while a writer holds the lock, so under the lock any temp file is left
    /// from a writer that died; remove them once per group per open store.
    private func removeStaleTemporaryFiles(group: GroupName, directory: FileDescriptor) throws(StoreError) {
        if state.withLock({ $0.cleanedGroups.contains(group) }) { return }
        let names = (try? directory.entryNames()) ?? []
        for name in names where name.hasPrefix(AtomicFile.temporaryPrefix) {
            try? directory.unlinkAt(name)
        }
        state.withLock { _ = $0.cleanedGroups.insert(group) }
    }
}

/// The write side of a vault, handed out only inside `VaultStore.withWriteLock`; do not keep it past
/// the closure, whose end releases the lock.
public struct WriteTransaction {
    let store: VaultStore
    /// Whether the previous holder of the write lock died while holding it (see
    /// `VaultStore.withWriteLock`): the layer above then finishes what it may have left half-done.
    public let previousWriterDied: Bool

    /// Whether durable item writes may go through the groups' spare files (see `VaultStore.withWriteLock`).
    let reusesSpares: Bool

    init(store: VaultStore, previousWriterDied: Bool = false, reusesSpares: Bool = false) {
        self.store = store
        self.previousWriterDied = previousWriterDied
        self.reusesSpares = reusesSpares
    }

    /// Encrypts `plaintext` under the key of `protectionClass` and durably stores it as item `id` of
    /// `group`, replacing any previous value; `locked` when the store lacks that class key.
    public func write(
        group: GroupName, id: ItemID, plaintext: UnsafeRawBufferPointer, protectionClass: ProtectionClass
    ) throws(StoreError) {
        try store.writeItem(
            group: group, id: id, plaintext: plaintext, protectionClass: protectionClass, reusingSpare: reusesSpares)
    }

    /// Encrypts and durably stores `plaintext` as item `id` of `group` under the key of
    /// `protectionClass`, and records `version` so that a later read can tell when the file was
    /// replaced with an older copy of itself (`VaultStore.checkNotRolledBack`). The record shares the
    /// item's directory fsync.
    public func write(
        group: GroupName, id: ItemID, plaintext: UnsafeRawBufferPointer, protectionClass: ProtectionClass,
        version: ItemVersion
    ) throws(StoreError) {
        try store.writeItem(
            group: group, id: id, plaintext: plaintext, protectionClass: protectionClass, version: version,
            reusingSpare: reusesSpares)
    }

    /// Stores the contents of `plaintext` (see `write(group:id:plaintext:protectionClass:)`).
    public func write(group: GroupName, id: ItemID, plaintext: SecureBytes, protectionClass: ProtectionClass)
        throws(StoreError)
    {
        try plaintext.withUnsafeBytes { bytes throws(StoreError) in
            try store.writeItem(
                group: group, id: id, plaintext: bytes, protectionClass: protectionClass, reusingSpare: reusesSpares)
        }
    }

    /// Marks item `id` of `group` as being moved to another key (its generation record says so), before
    /// the move's intent note is written (whose directory fsync makes both durable). Readers check the
    /// note only for marked items.
    public func markMoving(group: GroupName, id: ItemID) throws(StoreError) {
        try store.markMoving(group: group, id: id)
    }

    /// Durably removes item `id` of `group`; false when it did not exist.
    @discardableResult
    public func remove(group: GroupName, id: ItemID) throws(StoreError) -> Bool {
        try store.removeItem(group: group, id: id)
    }

    /// Durably writes a small note file `name` (which must start with '.', so listings skip it) in the
    /// directory of `group`: the layer above records intents there that survive a crash.
    public func writeNote(group: GroupName, name: String, contents: [UInt8]) throws(StoreError) {
        try store.writeNote(group: group, name: name, contents: contents)
    }

    /// Removes note `name` of `group` (no error when it is gone).
    public func removeNote(group: GroupName, name: String) throws(StoreError) {
        try store.removeNote(group: group, name: name)
    }

    /// The notes of `group` whose names start with `prefix`, with their contents.
    public func notes(group: GroupName, prefix: String) throws(StoreError) -> [(name: String, contents: [UInt8])] {
        try store.notes(group: group, prefix: prefix)
    }

    /// Reads item `id` of `group` under the lock.
    public func read(group: GroupName, id: ItemID) throws(StoreError) -> SecureBytes? {
        try store.readItem(group: group, id: id)
    }
}
