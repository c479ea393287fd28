import VaultCrypto
import VaultSystem

/// Rotation of the master key: every item re-encrypted under new keys, with a crash at any point
/// leaving a vault that opens (with the old key or the new one) with every item.
///
/// The new vault is built beside the old one, then switched in:
/// 0. `rekey.journal` (`RekeyJournal`), authenticated under the old and the new keys;
/// 1. `master.key.new` (and `always.key.new` for a passphrase vault) and `VAULT.new`;
/// 2. `groups.new/`: every item decrypted with the old keys and written under the new ones (new item
///    ids, since ids are keyed too), made durable with one `syncfs`;
/// 3. the commit point: `groups` is renamed `groups.old`;
/// 4. `groups.new` → `groups`, `VAULT.new` → `VAULT`, `master.key.new` → `master.key`,
///    `always.key.new` → `always.key`; then `groups.old` and the journal are removed.
/// A vault found with an authentic journal is rolled forward when `groups.old` exists (the remaining
/// renames), else rolled back (the new files removed). Both happen under the write lock, before the
/// vault is opened (`VaultStore.finishInterruptedRekey`); without an authentic journal nothing is done.
enum Rekey {
    static let newSuffix = ".new"
    static let oldGroups = VaultStore.groupsDirectoryName + ".old"
    static let newGroups = VaultStore.groupsDirectoryName + ".new"
    /// The renames after the commit point; a rekey to a new key file does only the first three (it made
    /// no key file in the vault).
    static let renames: [(String, String)] = [
        (newGroups, VaultStore.groupsDirectoryName),
        // Before VAULT: a marker that says "classes.key" must never be without it.
        (ItemClassKeyFile.fileName + newSuffix, ItemClassKeyFile.fileName),
        (VaultMarker.fileName + newSuffix, VaultMarker.fileName),
        (MasterKeyFile.fileName + newSuffix, MasterKeyFile.fileName),
        (AlwaysKeyFile.fileName + newSuffix, AlwaysKeyFile.fileName),
    ]
    static let keyFileRekeyRenameCount = 3
}

/// Where a rekey puts the new master key.
enum RekeyDestination {
    /// `master.key` (and `always.key` when wrapped), under `passphrase` (nil: plain).
    case masterKey(passphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits)
    /// A new external key file (see `MasterKeyFile.prepareNewKeyFile`).
    case keyFile(String)
    /// The same key, every item written again in format 2 (`upgrade`); the key stays where it is
    /// (`master.key`, or the external file `keyFile`).
    case upgrade(keyFile: String?)
}

extension VaultStore {
    /// Rotates the master key: a new random key (and class keys), every item re-encrypted by
    /// `copyItems` (which reads each item from this store and writes it into the target), then the
    /// switch. A format-2 vault is rekeyed in place instead (`rekeyInPlace`: every key file sealed
    /// again, no item touched), and `copyItems` is not called. `newPassphrase` wraps the new key (nil: a plain `master.key`). Needs the master key
    /// (opened with the passphrase or a key file); a vault whose key is in an external file is
    /// rekeyed with `rekey(newKeyFile:keySource:copyItems:)`. The store is stale afterwards: open the
    /// vault again. A failure at any step leaves a vault that `open` recovers (rolled back before the
    /// commit point, forward after it).
    public func rekey<Failure: StoreErrorConvertible>(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate, keySource: KeySource,
        copyItems: (RekeyTarget) throws(Failure) -> Void
    ) throws(Failure) {
        if let keyFile = keySource.keyFile {
            throw Failure(
                StoreError(
                    .invalidName,
                    "the key of the vault at \(path) is in the external file \(keyFile); rekey it to a new "
                        + "key file with --new-key-file PATH"))
        }
        try rekey(to: .masterKey(passphrase: newPassphrase, limits: limits), copyItems: copyItems)
    }

    /// Rotates the master key of a vault whose key is in an external key file (opened with it:
    /// `keySource.keyFile`): the new key goes to `newKeyFile`, a new file (0600, created exclusively
    /// and durably in an existing directory) or an existing 32-byte key file made by the operator (refused
    /// when group or others can read it). Crash-safe as the rekey of `master.key`: the journal names
    /// the new key file (its path, never the key), so that an interrupted rekey is finished or undone
    /// by the next open with the old key file, the new one, or neither; afterwards the vault opens
    /// with the new key file only. The old key file is left in place (a service may still be started
    /// with it until its unit names the new one). The store is stale afterwards.
    public func rekey<Failure: StoreErrorConvertible>(
        newKeyFile: String, keySource: KeySource, copyItems: (RekeyTarget) throws(Failure) -> Void
    ) throws(Failure) {
        guard keySource.keyFile != nil else {
            throw Failure(
                StoreError(
                    .invalidName,
                    "the vault at \(path) keeps its key in master.key, not in an external key file; run `vault rekey` "
                        + "without --new-key-file"))
        }
        try rekey(to: .keyFile(newKeyFile), copyItems: copyItems)
    }

    /// Converts a format-1 vault to format 2 (a key per group), crash-safe as a rekey is: `copyItems`
    /// writes every item into a new `groups` directory, each group with a key of its own, then one
    /// rename commits. The master key stays (in `master.key`, or in the external file of
    /// `keySource`). The store is stale afterwards: open the vault again. A format-1 vault is never
    /// converted otherwise.
    public func upgrade<Failure: StoreErrorConvertible>(
        keySource: KeySource, copyItems: (RekeyTarget) throws(Failure) -> Void
    ) throws(Failure) {
        // The journal names an absolute path (recovery may run in another working directory).
        let keyFile = keySource.keyFile.map { $0.hasPrefix("/") ? $0 : (try? FileDescriptor.resolvedPath($0)) ?? $0 }
        try rekey(to: .upgrade(keyFile: keyFile), copyItems: copyItems)
    }

    private func rekey<Failure: StoreErrorConvertible>(
        to destination: RekeyDestination, copyItems: (RekeyTarget) throws(Failure) -> Void
    ) throws(Failure) {
        _ = try Failure.converting { () throws(StoreError) in try ownerClassKeys("rekey it") }
        if formatVersion >= 2, case .upgrade = destination {
            throw Failure(
                StoreError(
                    .vaultAlreadyExists, "the vault at \(path) is in the current format already; nothing was changed"))
        }
        guard let masterKey else {
            let what: String
            if case .upgrade = destination { what = "upgrade" } else { what = "rekey" }
            throw Failure(StoreError(.locked, "\(what) needs the vault's passphrase (it was opened without it)"))
        }
        if formatVersion >= 2 {
            try Failure.converting { () throws(StoreError) in try rekeyInPlace(to: destination, masterKey) }
            forgetUnlockedKeys()
            return
        }
        try withWriteLock(finishingMoves: false) { (_) throws(Failure) in
            let target = try Failure.converting { () throws(StoreError) in
                try requireCurrentKeys()
                return try prepareRekey(to: destination, masterKey)
            }
            defer { target.close() }
            try copyItems(target)
            try Failure.converting { () throws(StoreError) in
                let keyFileRekey: Bool
                switch destination {
                case .keyFile: keyFileRekey = true
                case .upgrade(let keyFile): keyFileRekey = keyFile != nil
                case .masterKey: keyFileRekey = false
                }
                try switchToRekeyed(keyFileRekey: keyFileRekey)
            }
        }
        forgetUnlockedKeys()
    }

    /// Removes the keys cached by `vault unlock`: they belong to the old master key after a rekey.
    private func forgetUnlockedKeys() {
        _ = try? UnlockCache.remove(vaultID: vaultID, .afterFirstUnlock, path: location)
        _ = try? UnlockCache.remove(vaultID: vaultID, .whenUnlocked, path: location)
    }

    /// A rekey of `master.key`'s `master.key.new` (and `always.key.new` for a passphrase), beside the
    /// old files; nothing for a rekey to an external key file.
    func writeNewKeyFiles(for destination: RekeyDestination, _ newMaster: SymmetricKey, _ newKeys: ClassKeys)
        throws(StoreError)
    {
        guard case .masterKey(let newPassphrase, let limits) = destination else { return }
        try MasterKeyFile.rewrite(
            newMaster, passphrase: newPassphrase, limits: limits, in: directory, vaultPath: location,
            name: MasterKeyFile.fileName + Rekey.newSuffix)
        if newPassphrase != nil {
            try AlwaysKeyFile.write(
                newKeys, in: directory, vaultPath: location, name: AlwaysKeyFile.fileName + Rekey.newSuffix)
        }
    }

    /// The master key a rekey to `destination` switches to, and the external key file it is in (nil:
    /// `master.key`).
    func newMasterKey(for destination: RekeyDestination, current masterKey: SymmetricKey) throws(StoreError)
        -> (key: SymmetricKey, keyFile: String?)
    {
        switch destination {
        case .masterKey:
            return (try KeyFile.randomKey(), nil)
        case .upgrade(let keyFile):
            // The key stays; the journal names an external key file as a key-file rekey's would, so that
            // recovery renames only groups and VAULT, and leaves the key where it is.
            return (masterKey, keyFile)
        case .keyFile(let given):
            // Inside the vault, a rekey's own files (or a group directory's) could take its name, and the
            // only copy of the new key with it.
            if let vault = try? FileDescriptor.resolvedPath(location.string),
                let parent = try? FileDescriptor.resolvedPath(FilePath(given).removingTrailingSeparators.parent.string),
                parent == vault || parent.hasPrefix(vault + "/")
            {
                throw StoreError(
                    .invalidName,
                    "\(given) is inside the vault at \(path): keep the new key file outside the vault directory "
                        + "(e.g. /etc/vault/vault.key); nothing was changed",
                    path: given)
            }
            // Made (or checked) first, so that the journal never names a file that is not there.
            let (keyFile, key) = try ExternalKeyFile.prepareNew(given)
            guard key != masterKey else {
                throw StoreError(
                    .invalidName,
                    "\(given) holds the vault's current key; give the path of a new key file (one that does not "
                        + "exist yet is created)",
                    path: given)
            }
            return (key, keyFile)
        }
    }

    /// Steps 0 to 2 before the items: the journal, the new key files and marker, an empty `groups.new`.
    private func prepareRekey(to destination: RekeyDestination, _ masterKey: SymmetricKey) throws(StoreError)
        -> RekeyTarget
    {
        let (newMaster, newKeyFile) = try newMasterKey(for: destination, current: masterKey)
        var format: UInt8 = 1
        if case .upgrade = destination { format = 2 }
        let newKeys = try ClassKeys(master: newMaster)
        // A groups.old already there (a rename by hand, an older build's leftover) would make the commit
        // rename fail after the journal is written, and recovery then roll onto it: refuse first.
        if try VaultDirectory.exists(Rekey.oldGroups, in: directory, path: location) {
            let oldGroupsPath = location / Rekey.oldGroups
            throw StoreError(
                .integrity,
                "\(oldGroupsPath) exists and no rekey is under way: move it away (it may hold items of an earlier "
                    + "rekey) before rekeying; nothing was changed",
                path: oldGroupsPath.string)
        }
        // 0. The journal, authenticated under the old and the new keys: recovery acts on it alone.
        let journal = try RekeyJournal(vaultID: vaultID, newKeyFile: newKeyFile).encoded(
            oldAlways: try ownerClassKeys("rekey it").always, newAlways: newKeys.always)
        try AtomicFile.replace(RekeyJournal.fileName, contents: .plain(journal), in: directory, directoryPath: location)
        // 1. The new key files and marker, beside the old ones.
        try writeNewKeyFiles(for: destination, newMaster, newKeys)
        let marker = try VaultMarker(vaultID: vaultID, version: format, hasItemClassKeys: format >= 2).encoded(
            key: newKeys.always)
        try AtomicFile.replace(
            VaultMarker.fileName + Rekey.newSuffix, contents: .plain(marker), in: directory, directoryPath: location,
            permissions: format == 1 ? .ownerReadWrite : .ownerWriteAllRead)
        var itemClassKeys = newKeys
        if format >= 2 {
            itemClassKeys = try ItemClassKeyFile.random()
            try ItemClassKeyFile.write(
                itemClassKeys, under: newKeys, vaultID: vaultID, in: directory, vaultPath: location,
                name: ItemClassKeyFile.fileName + Rekey.newSuffix)
        }
        // 2. Every item under the new keys. A groups.new left by an earlier attempt goes first, unless it
        // is the directory this store reads its items from (renamed there by someone else).
        let newGroupsPath = location / Rekey.newGroups
        if let stale = try? directory.statusAt(Rekey.newGroups), let current = try? groupsDirectory.status(),
            stale.inode == current.inode, stale.device == current.device
        {
            throw StoreError(
                .integrity,
                "\(newGroupsPath) is the vault's own groups directory (renamed?); rekey changes nothing",
                path: newGroupsPath.string)
        }
        try? VaultDirectory.removeTree(Rekey.newGroups, in: directory, path: location)
        do {
            try directory.makeDirectoryAt(Rekey.newGroups, permissions: .ownerAll)
        } catch {
            throw StoreError.system(error, .mkdir, "create", path: newGroupsPath)
        }
        return RekeyTarget(
            store: self, classKeys: newKeys, itemClassKeys: itemClassKeys,
            groupsDirectory: try VaultDirectory.openSubdirectory(Rekey.newGroups, in: directory, path: newGroupsPath),
            format: format)
    }

    /// After the items: one `syncfs`, 3. the commit point, then 4. the switch.
    private func switchToRekeyed(keyFileRekey: Bool) throws(StoreError) {
        do {
            try directory.syncFileSystem()
        } catch {
            throw StoreError.system(error, .fsync, "syncfs", path: location)
        }
        do {
            try directory.renameAt(Self.groupsDirectoryName, to: Rekey.oldGroups)
        } catch {
            throw StoreError.system(error, .rename, "rename the groups directory of", path: location)
        }
        do {
            try directory.sync()
        } catch {
            throw StoreError.system(error, .fsync, "rename the groups directory of", path: location)
        }
        try Self.rollForward(directory: directory, path: location, keyFileRekey: keyFileRekey)
    }

    /// Finishes the switch after the commit point (also used by recovery). A rekey to a new key file
    /// made no key file in the vault, so a `master.key.new` or `always.key.new` there is not its own and
    /// is left alone.
    static func rollForward(directory: FileDescriptor, path: FilePath, keyFileRekey: Bool) throws(StoreError) {
        let renames = keyFileRekey ? Array(Rekey.renames.prefix(Rekey.keyFileRekeyRenameCount)) : Rekey.renames
        for (source, destination) in renames where try VaultDirectory.exists(source, in: directory, path: path) {
            do {
                try directory.renameAt(source, to: destination)
            } catch {
                throw StoreError.system(error, .rename, "rename \(source) in", path: path)
            }
        }
        try AtomicFile.syncDirectory(directory, path: path)
        // The old items go only once the new ones are in place under the name readers use.
        guard try VaultDirectory.exists(groupsDirectoryName, in: directory, path: path) else {
            let groupsPath = path / groupsDirectoryName
            throw StoreError(
                .integrity,
                "\(groupsPath) is missing after the rekey's renames; \(Rekey.oldGroups) is kept (it holds the "
                    + "items under the old key)",
                path: groupsPath.string)
        }
        try VaultDirectory.removeTree(Rekey.oldGroups, in: directory, path: path)
        _ = try AtomicFile.remove(RekeyJournal.fileName, in: directory, directoryPath: path)
        try AtomicFile.syncDirectory(directory, path: path)
    }

    /// Rolls an interrupted rekey forward or back, under the vault's lock, as its journal says; nothing
    /// to do (one stat) in the common case. Only an authentic journal (its tag verifies under a key
    /// file present) is acted on: the names `groups.old` or `master.key.new` alone are no instruction,
    /// and without a journal nothing is renamed or removed (an open then reports what it finds).
    /// Returns the new key file of a rekey to one that was rolled forward: the vault opens with that
    /// key file only from now on.
    @discardableResult
    static func finishInterruptedRekey(directory: FileDescriptor, path: FilePath, keySource: KeySource)
        throws(StoreError) -> String?
    {
        guard try VaultDirectory.exists(RekeyJournal.fileName, in: directory, path: path) else { return nil }
        return try withVaultLock(directory: directory, path: path) { _ throws(StoreError) in
            try recoverRekey(directory: directory, path: path, keySource: keySource)
        }
    }

    /// The recovery itself, under the lock; returns what `finishInterruptedRekey` returns.
    private static func recoverRekey(directory: FileDescriptor, path: FilePath, keySource: KeySource)
        throws(StoreError) -> String?
    {
        let journalPath = path / RekeyJournal.fileName
        guard
            let journal = try SmallFile.readIfPresent(
                RekeyJournal.fileName, in: directory, path: journalPath, limit: RekeyJournal.maximumByteCount)
        else {
            return nil  // another process finished it meanwhile
        }
        let keys = RekeyJournal.availableAlwaysKeys(in: directory, vaultPath: path, source: keySource, journal: journal)
        guard RekeyJournal.isAuthentic(journal, under: keys) else {
            let hasMasterKey = try VaultDirectory.exists(MasterKeyFile.fileName, in: directory, path: path)
            let hint =
                keySource.keyFile == nil && !hasMasterKey
                ? " (if the vault's key is in an external file, give it, old or new, with --key-file PATH)" : ""
            throw StoreError(
                .integrity,
                "\(journalPath) does not verify under any key file of the vault at \(path)\(hint): vault will not act "
                    + "on an interrupted rekey it cannot authenticate (nothing was renamed or removed); restore the "
                    + "vault from a backup, or inspect its files",
                path: journalPath.string)
        }
        let newKeyFile = RekeyJournal.claimedNewKeyFile(journal)
        if RekeyJournal.isInPlace(journal) {
            let forward = try recoverRekeyInPlace(directory: directory, path: path, keyFileRekey: newKeyFile != nil)
            return forward ? newKeyFile : nil
        }
        if try VaultDirectory.exists(Rekey.oldGroups, in: directory, path: path) {
            try rollForward(directory: directory, path: path, keyFileRekey: newKeyFile != nil)
            return newKeyFile
        }
        // Before the commit point: the old key files are all in place, so the new files go. A rekey of
        // master.key must not remove master.key.new when it is the only key left; a rekey to a new key
        // file made none in the vault (its new key file outside the vault stays: a retry may reuse it).
        if newKeyFile == nil {
            // A journal of a master.key rekey never belongs to a key-file vault: master.key must be there.
            guard try VaultDirectory.exists(MasterKeyFile.fileName, in: directory, path: path) else {
                throw StoreError(
                    .integrity,
                    "the vault at \(path) has a rekey journal but neither groups.old nor master.key: refusing to "
                        + "remove master.key.new, the only key left",
                    path: journalPath.string)
            }
        }
        try VaultDirectory.removeTree(Rekey.newGroups, in: directory, path: path)
        var leftovers = [VaultMarker.fileName + Rekey.newSuffix, ItemClassKeyFile.fileName + Rekey.newSuffix]
        if newKeyFile == nil {
            leftovers += [MasterKeyFile.fileName + Rekey.newSuffix, AlwaysKeyFile.fileName + Rekey.newSuffix]
        }
        for name in leftovers + [RekeyJournal.fileName] {
            _ = try AtomicFile.remove(name, in: directory, directoryPath: path)
        }
        return nil
    }
}
