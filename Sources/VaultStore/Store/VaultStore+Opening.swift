import VaultCrypto
import VaultSystem

/// Creating and opening a vault: the directory checks, init under the lock on `.lock`, the marker,
/// and the rekey recovery that comes before everything else.
extension VaultStore {
    /// Creates a new vault at `path`: the directory (0700, and missing parents), `.lock`, `master.key`
    /// (0600, 32 random bytes), `groups/` and, last, the `VAULT` marker, each durable, all while holding
    /// the lock on `.lock`. Refuses with `vaultAlreadyExists` when a vault is there; nothing is
    /// overwritten. An init that was interrupted after `master.key` was written (its creator died: it
    /// no longer holds the lock) is completed with that key. `keySource` chooses where the new key
    /// goes: `master.key` (plain, or wrapped when it has a passphrase provider) or an external key file.
    /// `versions` reads an item's version from its plaintext, so that the store can finish moves that a
    /// dead writer left half-done (see `WriteTransaction.move`).
    package static func create(
        at path: String, keySource: KeySource = KeySource(), versions: ItemVersionReader? = nil,
        replication: (any Replication)? = nil
    ) throws(StoreError) -> VaultStore {
        try create(
            at: FilePath(path), keySource: keySource, versions: versions, replication: replication,
            openingExisting: false)
    }

    /// Opens the vault at `path`, or creates it when there is none: what many processes starting at
    /// once on a fresh machine may all call. Every caller ends with the same, complete vault: a
    /// creator holds the lock on `.lock` until its marker is written, and the others wait for it.
    /// With an external key file nothing is created (`vaultNotFound`): that takes an explicit `create`.
    package static func openOrCreate(
        at path: String, keySource: KeySource = KeySource(), versions: ItemVersionReader? = nil,
        replication: (any Replication)? = nil
    ) throws(StoreError) -> VaultStore {
        do {
            return try open(at: path, keySource: keySource, versions: versions, replication: replication)
        } catch  where error.code == .vaultNotFound {
            // With an external key, a mistyped path must not get a fresh vault under a production key.
            if let keyFile = keySource.keyFile {
                throw StoreError(
                    .vaultNotFound,
                    "no vault at \(path), and none is created implicitly with the external key file \(keyFile); "
                        + "create it with `vault --vault \(path) init --key-file \(keyFile)`",
                    path: path, cause: error)
            }
            return try create(
                at: FilePath(path), keySource: keySource, versions: versions, replication: replication,
                openingExisting: true)
        }
    }

    /// Opens the vault at `path`, checking the directory, the key file and the marker; every refusal
    /// names the file and the fix. A vault of the old format 1 is `needsUpgrade` (after any
    /// interrupted upgrade or rekey is finished or undone): `upgrade(at:…)` converts it.
    package static func open(
        at path: String, keySource: KeySource = KeySource(), versions: ItemVersionReader? = nil,
        replication: (any Replication)? = nil
    ) throws(StoreError) -> VaultStore {
        let location = FilePath(path)
        if keySource.keyFile == nil, keySource.loadedKey == nil, let owner = memberOpenOwner(location),
            let member = try openAsMember(location, owner: owner, versions: versions, replication: replication)
        {
            return member
        }
        do {
            return try openAsOwnerThroughRekeys(
                location, keySource: keySource, versions: versions, replication: replication)
        } catch  where error.errno != nil && FormatOneVault.isFormatOne(at: location) {
            // A format-1 vault is opened to be upgraded, which writes: say what it takes.
            throw StoreError(
                error.code,
                "\(error.message); the vault at \(path) is in the old format 1, which is upgraded at the first "
                    + "open that holds its master key: run `vault upgrade` where the vault is writable",
                path: error.path, cause: error)
        }
    }

    /// Whether the vault at `vaultPath` is of the old format 1 (its marker, read unchecked): for a
    /// message about an upgrade that did not run.
    package static func isFormatOne(vaultPath: String) -> Bool { FormatOneVault.isFormatOne(at: FilePath(vaultPath)) }

    /// `open` as the vault's owner (or root): rekey recovery, the marker, the class keys.
    static func openAsOwner(
        _ location: FilePath, keySource: KeySource, versions: ItemVersionReader?, replication: (any Replication)?
    ) throws(StoreError) -> VaultStore {
        let path = location.string
        let directory = try VaultDirectory.open(location)
        do throws(StoreError) {
            let rekeyedTo = try finishInterruptedRekey(directory: directory, path: location, keySource: keySource)
            let markerPath = location / VaultMarker.fileName
            var found = try readMarker(in: directory, path: markerPath)
            var itemsWithoutMarker = false
            if found == nil {
                // An init may be running: it holds the lock until its marker is written.
                try waitForInit(directory: directory, path: location)
                // Items are looked for before the marker: a marker is written before any item, so items
                // seen before a look that finds none mean the marker is lost. Seen after it, they may be
                // those of a vault that another process finished, and wrote to, between the two looks.
                itemsWithoutMarker = holdsItems(directory)
                found = try readMarker(in: directory, path: markerPath)
            }
            guard let markerBytes = found else {
                if itemsWithoutMarker {
                    throw StoreError(
                        .integrity,
                        "\(markerPath) is missing but the vault at \(path) holds items; restore it from a backup "
                            + "(a new marker would not match them)",
                        path: markerPath.string)
                }
                if (try? directory.statusAt(MasterKeyFile.fileName)) != nil {
                    throw StoreError(
                        .vaultNotFound,
                        "vault at \(path) is incomplete: \(markerPath) is missing (an init was interrupted); "
                            + "run `vault init` again to finish it",
                        path: markerPath.string)
                }
                throw StoreError(
                    .vaultNotFound,
                    "no vault at \(path) (no \(VaultMarker.fileName) file); create one with `vault init`",
                    path: path)
            }
            // The version must be checked before the key: a future format may keep its key elsewhere.
            if markerBytes.count >= 5, Array(markerBytes[0..<4]) == VaultMarker.magic,
                !VaultMarker.supportedVersions.contains(markerBytes[4])
            {
                throw StoreError(
                    .unsupportedFormat,
                    "vault at \(path) has format version \(markerBytes[4]); this build of vault reads versions "
                        + "\(VaultMarker.supportedVersions.lowerBound) to \(VaultMarker.supportedVersions.upperBound)",
                    path: markerPath.string)
            }
            if FormatOneVault.isFormatOne(markerBytes) { throw FormatOneVault.needsUpgrade(location) }
            let classKeys = try loadClassKeys(
                directory: directory, path: location, markerBytes: markerBytes, keySource: keySource)
            do {
                return try assemble(
                    location, directory: directory, markerBytes: markerBytes, classKeys: classKeys,
                    keySource: keySource, versions: versions, replication: replication)
            } catch  where error.code == .wrongKey || (error.code == .integrity && error.path == markerPath.string) {
                // This open finished a rekey to a new key file and was given another key file: say which.
                guard let rekeyedTo, rekeyedTo != keySource.keyFile else { throw error }
                throw StoreError(
                    .locked,
                    "the vault at \(path) was rekeyed to the key file \(rekeyedTo) (this open finished an interrupted "
                        + "`vault rekey --new-key-file`): give --key-file \(rekeyedTo), VAULT_KEY_FILE, or "
                        + "LoadCredential=\(KeySource.credentialName):\(rekeyedTo)",
                    path: markerPath.string, cause: error)
            }
        } catch {
            try? directory.close()
            throw error
        }
    }

    private static func create(
        at location: FilePath, keySource: KeySource, versions: ItemVersionReader?, replication: (any Replication)?,
        openingExisting: Bool
    ) throws(StoreError) -> VaultStore {
        try VaultDirectory.prepareForCreate(location)
        let directory = try VaultDirectory.open(location)
        let created: VaultStore?
        do {
            // The lock file comes first: creators hold it while they build the vault, so one that finds a
            // master.key without a marker while holding the lock knows that its creator died.
            created = try withVaultLock(directory: directory, path: location) { lockFile throws(StoreError) in
                try build(
                    in: directory, location: location, keySource: keySource, versions: versions,
                    replication: replication,
                    openingExisting: openingExisting, lockFile: lockFile)
            }
        } catch {
            try? directory.close()
            throw error
        }
        if let created { return created }
        // Another process made the vault first: open what it made.
        try? directory.close()
        return try open(at: location.string, keySource: keySource, versions: versions, replication: replication)
    }

    /// Builds the vault in `directory` with the lock held through `lockFile`; nil when a vault is
    /// there already and `openingExisting` says to open it instead. Takes ownership of `directory`
    /// only on success.
    private static func build(
        in directory: FileDescriptor, location: FilePath, keySource: KeySource, versions: ItemVersionReader?,
        replication: (any Replication)?,
        openingExisting: Bool, lockFile: FileDescriptor
    ) throws(StoreError) -> VaultStore? {
        if try VaultDirectory.exists(VaultMarker.fileName, in: directory, path: location) {
            guard openingExisting else {
                throw StoreError(
                    .vaultAlreadyExists, "a vault already exists at \(location); nothing was changed",
                    path: location.string)
            }
            return nil
        }
        // A new vault's lock file says "idle", or its first writer would take the empty mark for a death.
        // Only here: no writer can hold a vault whose VAULT marker is not written yet.
        if (try? lockFile.status().size) == 0 { WriterMark.idle.write(to: lockFile) }
        // A marker is missing, not an init unfinished, when items are there: a new marker would carry a
        // new vault id, which none of them is bound to (and they would all fail authentication).
        if holdsItems(directory) {
            let markerPath = location / VaultMarker.fileName
            throw StoreError(
                .integrity,
                "\(markerPath) is missing but the vault holds items: it is no interrupted init, and a new marker "
                    + "would not match them; restore \(VaultMarker.fileName) from a backup (nothing was changed)",
                path: markerPath.string)
        }
        let masterKey: SymmetricKey
        if keySource.keyFile == nil, try VaultDirectory.exists(MasterKeyFile.fileName, in: directory, path: location) {
            // A previous init stopped before its marker: finish it with the key it left.
            switch try MasterKeyFile.read(in: directory, vaultPath: location, source: keySource) {
            case .key(let key): masterKey = key
            case .wrapped(let bytes, let keyPath):
                masterKey = try MasterKeyFile.unwrap(bytes, path: keyPath, vaultPath: location, source: keySource)
            }
        } else {
            masterKey = try MasterKeyFile.create(in: directory, vaultPath: location, source: keySource)
        }
        let classKeys = try ClassKeys(master: masterKey)
        if keySource.keyFile == nil, keySource.passphrase != nil {
            try AlwaysKeyFile.write(classKeys, in: directory, vaultPath: location)
        }
        let groups = try ensureGroupsDirectory(in: directory, path: location)
        try? groups.close()
        let marker = try VaultMarker.random()
        // A leftover of an interrupted init (no marker, no items) is replaced: nothing uses it.
        try ItemClassKeyFile.write(
            try ItemClassKeyFile.random(), under: classKeys, vaultID: marker.vaultID, in: directory,
            vaultPath: location)
        let encoded = try marker.encoded(key: classKeys.always)
        // Members of shared groups read the marker (its vault id); only the owner checks it.
        try AtomicFile.createExclusively(
            VaultMarker.fileName, contents: .plain(encoded), in: directory, directoryPath: location,
            permissions: .ownerWriteAllRead)
        return try assemble(
            location, directory: directory, markerBytes: encoded, classKeys: classKeys, keySource: keySource,
            versions: versions, replication: replication)
    }

    /// Runs `body` holding the OFD lock on `.lock` through a descriptor of its own (made when missing),
    /// for the steps that come before a store exists: init and rekey recovery.
    static func withVaultLock<R>(
        directory: FileDescriptor, path: FilePath, _ body: (FileDescriptor) throws(StoreError) -> R
    ) throws(StoreError) -> R {
        let lockFile = try ensureLockFile(in: directory, path: path)
        defer { try? lockFile.close() }
        do {
            try lockFile.lock(.exclusive)
        } catch {
            throw StoreError.system(error, .lock, "lock", path: path / lockFileName)
        }
        defer { try? lockFile.unlock() }
        return try body(lockFile)
    }

    /// Whether any group directory (of `groups`, or of a rekey's `groups.old`/`groups.new`) holds an
    /// item file: then a missing marker is damage, not an unfinished init.
    private static func holdsItems(_ directory: FileDescriptor) -> Bool {
        for name in [groupsDirectoryName, Rekey.oldGroups, Rekey.newGroups] {
            guard let groups = try? directory.openDirectoryAt(name) else { continue }
            defer { try? groups.close() }
            for group in (try? groups.entryNames()) ?? [] {
                guard let fd = try? groups.openDirectoryAt(group) else { continue }
                defer { try? fd.close() }
                if ((try? fd.entryNames()) ?? []).contains(where: { $0.hasSuffix(ItemID.fileSuffix) }) { return true }
            }
        }
        return false
    }

    /// The marker's bytes, or nil when there is no marker.
    static func readMarker(in directory: FileDescriptor, path markerPath: FilePath) throws(StoreError)
        -> [UInt8]?
    {
        try SmallFile.readIfPresent(
            VaultMarker.fileName, in: directory, path: markerPath, limit: VaultMarker.maximumReadByteCount)
    }

    /// Waits until no init holds the lock on `.lock` (an init in progress holds it until its marker is
    /// written); nothing to wait for when there is no lock file.
    private static func waitForInit(directory: FileDescriptor, path: FilePath) throws(StoreError) {
        let lockPath = path / lockFileName
        let lockFile: FileDescriptor
        do {
            lockFile = try directory.openAt(lockFileName, [.readWrite, .nonBlocking])
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError.system(error, .open, "open the lock file", path: lockPath)
        }
        defer { try? lockFile.close() }
        do {
            try lockFile.lock(.exclusive)
            try lockFile.unlock()
        } catch {
            throw StoreError.system(error, .lock, "lock", path: lockPath)
        }
    }

    /// Checks the marker against the `always` class key and opens the lock file and the groups
    /// directory. Takes ownership of `directory` only on success.
    private static func assemble(
        _ location: FilePath, directory: FileDescriptor, markerBytes: [UInt8], classKeys: ClassKeys,
        keySource: KeySource, versions: ItemVersionReader?, replication: (any Replication)?
    ) throws(StoreError) -> VaultStore {
        let markerPath = location / VaultMarker.fileName
        let marker: VaultMarker
        do {
            marker = try VaultMarker.decode(markerBytes, key: classKeys.always, path: markerPath)
        } catch  where error.code == .integrity {
            throw wrongKeyOrAlteredMarker(
                error, location: location, directory: directory, markerBytes: markerBytes,
                classKeys: classKeys, keySource: keySource)
        }
        var itemClassKeys: ClassKeys?
        if marker.hasItemClassKeys {
            itemClassKeys = try ItemClassKeyFile.load(
                in: directory, vaultPath: location, vaultID: marker.vaultID, classKeys: classKeys)
            guard itemClassKeys != nil else {
                let keyPath = location / ItemClassKeyFile.fileName
                throw StoreError(
                    .integrity,
                    "\(keyPath) is missing: the private groups' items of the vault at \(location) are sealed under the "
                        + "keys it holds; restore it from a backup (nothing was changed)",
                    path: keyPath.string)
            }
        }
        let lockFile = try ensureLockFile(in: directory, path: location)
        do throws(StoreError) {
            let groups = try ensureGroupsDirectory(in: directory, path: location)
            return VaultStore(
                location: location, vaultID: marker.vaultID, directory: directory, groupsDirectory: groups,
                lockFile: lockFile, classKeys: classKeys, itemClassKeys: itemClassKeys, versions: versions,
                replication: replication, versionsKeptSetting: marker.versionsKept)
        } catch {
            try? lockFile.close()
            throw error
        }
    }

    /// `.lock`, opened (and created when missing); it must be a regular file.
    static func ensureLockFile(in directory: FileDescriptor, path: FilePath) throws(StoreError) -> FileDescriptor {
        let lockPath = path / lockFileName
        let fd: FileDescriptor
        do {
            fd = try directory.openAt(lockFileName, [.readWrite, .create, .nonBlocking], permissions: .ownerReadWrite)
        } catch {
            throw StoreError.system(error, .open, "open the lock file", path: lockPath)
        }
        _ = try SmallFile.status(ofRegular: fd, path: lockPath, inspecting: "open the lock file")
        return fd
    }

    /// `groups/`, opened (and created when missing, unless a rekey's directories are there instead).
    private static func ensureGroupsDirectory(in directory: FileDescriptor, path: FilePath) throws(StoreError)
        -> FileDescriptor
    {
        let groupsPath = path / groupsDirectoryName
        do {
            return try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
        } catch  where error.errno == .noSuchFileOrDirectory {
            // A new vault, or one whose groups/ is gone. If a rekey's directories are there instead, an
            // empty groups/ would hide every item: say so, and change nothing.
            for name in [Rekey.oldGroups, Rekey.newGroups]
            where try VaultDirectory.exists(name, in: directory, path: path) {
                throw StoreError(
                    .integrity,
                    "\(groupsPath) is missing but \(path / name) exists, and no rekey journal says why (an interrupted "
                        + "rekey keeps one): vault changes nothing; if the items are in \(name), rename it back to "
                        + "\(groupsDirectoryName)",
                    path: groupsPath.string)
            }
        }
        var created = true
        do {
            try directory.makeDirectoryAt(groupsDirectoryName, permissions: .ownerAll)
        } catch {
            guard error == .fileExists else { throw StoreError.system(error, .mkdir, "create", path: groupsPath) }
            created = false
        }
        if created { try AtomicFile.syncDirectory(directory, path: path) }
        return try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
    }
}
