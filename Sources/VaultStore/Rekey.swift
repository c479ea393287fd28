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
    static let renames: [(String, String)] = [
        (newGroups, VaultStore.groupsDirectoryName),
        (VaultMarker.fileName + newSuffix, VaultMarker.fileName),
        (MasterKeyFile.fileName + newSuffix, MasterKeyFile.fileName),
        (MasterKeyFile.alwaysKeyFileName + newSuffix, MasterKeyFile.alwaysKeyFileName),
    ]
}

/// The half-built new vault that a rekey writes items into.
public struct RekeyTarget {
    let store: VaultStore
    let classKeys: ClassKeys
    let groupsDirectory: FileDescriptor
    private let state: RekeyState

    final class RekeyState {
        var groupDirectories: [GroupName: FileDescriptor] = [:]
        var groupKeys: [GroupName: GroupKeys] = [:]
    }

    init(store: VaultStore, classKeys: ClassKeys, groupsDirectory: FileDescriptor) {
        self.store = store
        self.classKeys = classKeys
        self.groupsDirectory = groupsDirectory
        self.state = RekeyState()
    }

    func keys(_ group: GroupName) throws(StoreError) -> GroupKeys {
        if let keys = state.groupKeys[group] { return keys }
        let keys = try GroupKeys(classKeys: classKeys, group: group)
        state.groupKeys[group] = keys
        return keys
    }

    /// The id the item with `primaryKey` has under the new keys.
    public func itemID(group: GroupName, primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        try store.itemID(primaryKey, indexKey: try keys(group).index)
    }

    /// Writes an item of the new vault (not durable until the rekey syncs the file system).
    public func write(
        group: GroupName, id: ItemID, plaintext: UnsafeRawBufferPointer, protectionClass: ProtectionClass,
        version: ItemVersion?
    ) throws(StoreError) {
        let directory = try groupDirectory(group)
        let path = store.path + "/" + Rekey.newGroups + "/" + group.rawValue
        let key = try keys(group)
        guard let encryption = key.encryption(protectionClass) else {
            throw StoreError(.locked, "the new \(protectionClass) class key is missing", path: path)
        }
        let contents = try ItemFile.seal(
            plaintext, key: encryption, protectionClass: protectionClass, vaultID: store.vaultID, group: group, id: id)
        // As in `VaultStore.writeItem`: generation 1 has no record (the new directory holds none to remove).
        var record: (name: String, text: String?)?
        if let version, version.generation > 1 {
            let tag = try GenerationRecord.tag(
                key: key.index, vaultID: store.vaultID, group: group, id: id, version: version)
            record = (GenerationRecord.name(id), GenerationRecord.text(generation: version.generation, tag: tag))
        }
        try contents.withStoreBytes { bytes throws(StoreError) in
            try AtomicFile.replace(
                id.fileName, contents: bytes, in: directory, directoryPath: path, durable: false,
                generationRecord: record)
        }
    }

    private func groupDirectory(_ group: GroupName) throws(StoreError) -> FileDescriptor {
        if let fd = state.groupDirectories[group] { return fd }
        let path = store.path + "/" + Rekey.newGroups + "/" + group.rawValue
        do {
            try groupsDirectory.makeDirectoryAt(group.rawValue, permissions: .ownerAll)
        } catch  where error != .fileExists {
            throw StoreError.system(error, "create", path: path)
        } catch {}
        let fd = try VaultDirectory.openSubdirectory(group.rawValue, in: groupsDirectory, path: path)
        state.groupDirectories[group] = fd
        return fd
    }

    func close() {
        for fd in state.groupDirectories.values { try? fd.close() }
        try? groupsDirectory.close()
    }
}

/// Where a rekey puts the new master key.
enum RekeyDestination {
    /// `master.key` (and `always.key` when wrapped), under `passphrase` (nil: plain).
    case masterKey(passphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits)
    /// A new external key file (see `MasterKeyFile.prepareNewKeyFile`).
    case keyFile(String)
}

extension VaultStore {
    /// Rotates the master key: a new random key (and class keys), every item re-encrypted by
    /// `copyItems` (which reads each item from this store and writes it into the target), then the
    /// switch. `newPassphrase` wraps the new key (nil: a plain `master.key`). Needs the master key
    /// (opened with the passphrase or a key file); a vault whose key is in an external file is
    /// rekeyed with `rekey(newKeyFile:keySource:copyItems:)`. The store is stale afterwards: open the
    /// vault again. A failure at any step leaves a vault that `open` recovers (rolled back before the
    /// commit point, forward after it).
    public func rekey(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate, keySource: KeySource,
        copyItems: (RekeyTarget) throws -> Void
    ) throws {
        guard keySource.keyFile == nil else {
            throw StoreError(
                .invalidName,
                "the key of the vault at \(path) is in the external file \(keySource.keyFile!); rekey it to a new "
                    + "key file with --new-key-file PATH")
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
    public func rekey(newKeyFile: String, keySource: KeySource, copyItems: (RekeyTarget) throws -> Void) throws {
        guard keySource.keyFile != nil else {
            throw StoreError(
                .invalidName,
                "the vault at \(path) keeps its key in master.key, not in an external key file; run `vault rekey` "
                    + "without --new-key-file")
        }
        try rekey(to: .keyFile(newKeyFile), copyItems: copyItems)
    }

    private func rekey(to destination: RekeyDestination, copyItems: (RekeyTarget) throws -> Void) throws {
        guard let masterKey else {
            throw StoreError(.locked, "rekey needs the vault's passphrase (it was opened without it)")
        }
        try withWriteLock { tx in
            let newMaster: SecureBytes
            var newKeyFile: String?
            switch destination {
            case .masterKey:
                newMaster = try SecureBytes.random(count: MasterKeyFile.keyByteCount)
            case .keyFile(let given):
                // Made (or checked) first, so that the journal never names a file that is not there.
                (newKeyFile, newMaster) = try MasterKeyFile.prepareNewKeyFile(given)
                guard !newMaster.constantTimeEquals(masterKey) else {
                    throw StoreError(
                        .invalidName,
                        "\(given) holds the vault's current key; give the path of a new key file (one that does not "
                            + "exist yet is created)",
                        path: given)
                }
            }
            let newKeys = try ClassKeys(master: newMaster)
            // A groups.old already there (a rename by hand, an older build's leftover) would make the commit
            // rename fail after the journal is written, and recovery then roll onto it: refuse first.
            if try Self.exists(Rekey.oldGroups, in: directory, path: path) {
                throw StoreError(
                    .integrity,
                    "\(path)/\(Rekey.oldGroups) exists and no rekey is under way: move it away (it may hold items "
                        + "of an earlier rekey) before rekeying; nothing was changed",
                    path: path + "/" + Rekey.oldGroups)
            }
            // 0. The journal, authenticated under the old and the new keys: recovery acts on it alone.
            let journal = try RekeyJournal(vaultID: vaultID, newKeyFile: newKeyFile).encoded(
                oldAlways: classKeys.always, newAlways: newKeys.always)
            try journal.withStoreBytes { bytes throws(StoreError) in
                try AtomicFile.replace(RekeyJournal.fileName, contents: bytes, in: directory, directoryPath: path)
            }
            // 1. The new key files and marker, beside the old ones.
            if case .masterKey(let newPassphrase, let limits) = destination {
                try MasterKeyFile.rewrite(
                    newMaster, passphrase: newPassphrase, limits: limits, in: directory, vaultPath: path,
                    name: MasterKeyFile.fileName + Rekey.newSuffix)
                if newPassphrase != nil {
                    try MasterKeyFile.writeAlwaysKey(
                        newKeys, in: directory, vaultPath: path,
                        name: MasterKeyFile.alwaysKeyFileName + Rekey.newSuffix)
                }
            }
            let marker = try VaultMarker(vaultID: vaultID).encoded(key: newKeys.always)
            try marker.withStoreBytes { bytes throws(StoreError) in
                try AtomicFile.replace(
                    VaultMarker.fileName + Rekey.newSuffix, contents: bytes, in: directory, directoryPath: path)
            }
            // 2. Every item under the new keys. A groups.new left by an earlier attempt goes first, unless it
            // is the directory this store reads its items from (renamed there by someone else).
            if let stale = try? directory.statusAt(Rekey.newGroups), let current = try? groupsDirectory.status(),
                stale.inode == current.inode, stale.device == current.device
            {
                throw StoreError(
                    .integrity,
                    "\(path)/\(Rekey.newGroups) is the vault's own groups directory (renamed?); rekey changes nothing",
                    path: path + "/" + Rekey.newGroups)
            }
            try? VaultDirectory.removeTree(Rekey.newGroups, in: directory, path: path)
            do {
                try directory.makeDirectoryAt(Rekey.newGroups, permissions: .ownerAll)
            } catch let error as Errno {
                throw StoreError.system(error, "create", path: path + "/" + Rekey.newGroups)
            }
            let target = RekeyTarget(
                store: self, classKeys: newKeys,
                groupsDirectory: try VaultDirectory.openSubdirectory(
                    Rekey.newGroups, in: directory, path: path + "/" + Rekey.newGroups))
            defer { target.close() }
            try copyItems(target)
            do {
                try directory.syncFileSystem()
            } catch let error as Errno {
                throw StoreError.system(error, "syncfs", path: path)
            }
            // 3. The commit point, then 4. the switch.
            do {
                try directory.renameAt(Self.groupsDirectoryName, to: Rekey.oldGroups)
                try directory.sync()
            } catch let error as Errno {
                throw StoreError.system(error, "rename the groups directory of", path: path)
            }
            try Self.rollForward(directory: directory, path: path, keyFileRekey: newKeyFile != nil)
            _ = tx
        }
        // Keys cached by `vault unlock` belong to the old key now.
        _ = try? UnlockCache.remove(vaultID: vaultID, .afterFirstUnlock, path: path)
        _ = try? UnlockCache.remove(vaultID: vaultID, .whenUnlocked, path: path)
    }

    /// Whether `name` exists in `directory`; an error other than ENOENT is an error, never "no" (a
    /// rename skipped by mistake would mix old and new keys).
    static func exists(_ name: String, in directory: FileDescriptor, path: String) throws(StoreError) -> Bool {
        do {
            _ = try directory.statusAt(name)
            return true
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, "inspect", path: path + "/" + name)
        }
    }

    /// Finishes the switch after the commit point (also used by recovery). A rekey to a new key file
    /// made no key file in the vault, so a `master.key.new` or `always.key.new` there is not its own and
    /// is left alone.
    static func rollForward(directory: FileDescriptor, path: String, keyFileRekey: Bool) throws(StoreError) {
        let renames = keyFileRekey ? Array(Rekey.renames.prefix(2)) : Rekey.renames
        for (source, destination) in renames where try exists(source, in: directory, path: path) {
            do {
                try directory.renameAt(source, to: destination)
            } catch {
                throw StoreError.system(error, "rename \(source) in", path: path)
            }
        }
        try AtomicFile.syncDirectory(directory, path: path)
        // The old items go only once the new ones are in place under the name readers use.
        guard try exists(groupsDirectoryName, in: directory, path: path) else {
            throw StoreError(
                .integrity,
                "\(path)/\(groupsDirectoryName) is missing after the rekey's renames; \(Rekey.oldGroups) is kept "
                    + "(it holds the items under the old key)",
                path: path + "/" + groupsDirectoryName)
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
    static func finishInterruptedRekey(directory: FileDescriptor, path: String, keySource: KeySource)
        throws(StoreError) -> String?
    {
        guard try exists(RekeyJournal.fileName, in: directory, path: path) else { return nil }
        return try withVaultLock(directory: directory, path: path) { _ throws(StoreError) in
            try recoverRekey(directory: directory, path: path, keySource: keySource)
        }
    }

    /// The recovery itself, under the lock; returns what `finishInterruptedRekey` returns.
    private static func recoverRekey(directory: FileDescriptor, path: String, keySource: KeySource)
        throws(StoreError) -> String?
    {
        let journalPath = path + "/" + RekeyJournal.fileName
        let journal: [UInt8]
        do {
            journal = try VaultDirectory.readSmallFile(
                RekeyJournal.fileName, in: directory, path: journalPath, limit: RekeyJournal.maximumByteCount)
        } catch  where error.errno == .noSuchFileOrDirectory {
            return nil  // another process finished it meanwhile
        }
        let keys = RekeyJournal.availableAlwaysKeys(
            in: directory, vaultPath: path, source: keySource, journal: journal)
        guard RekeyJournal.isAuthentic(journal, under: keys) else {
            let hasMasterKey = try exists(MasterKeyFile.fileName, in: directory, path: path)
            let hint =
                keySource.keyFile == nil && !hasMasterKey
                ? " (if the vault's key is in an external file, give it, old or new, with --key-file PATH)" : ""
            throw StoreError(
                .integrity,
                "\(journalPath) does not verify under any key file of the vault at \(path)\(hint): vault will not act "
                    + "on an interrupted rekey it cannot authenticate (nothing was renamed or removed); restore the "
                    + "vault from a backup, or inspect its files",
                path: journalPath)
        }
        let newKeyFile = RekeyJournal.claimedNewKeyFile(journal)
        if try exists(Rekey.oldGroups, in: directory, path: path) {
            try rollForward(directory: directory, path: path, keyFileRekey: newKeyFile != nil)
            return newKeyFile
        }
        // Before the commit point: the old key files are all in place, so the new files go. A rekey of
        // master.key must not remove master.key.new when it is the only key left; a rekey to a new key
        // file made none in the vault (its new key file outside the vault stays: a retry may reuse it).
        if newKeyFile == nil {
            // A journal of a master.key rekey never belongs to a key-file vault: master.key must be there.
            guard try exists(MasterKeyFile.fileName, in: directory, path: path) else {
                throw StoreError(
                    .integrity,
                    "the vault at \(path) has a rekey journal but neither groups.old nor master.key: refusing to "
                        + "remove master.key.new, the only key left",
                    path: journalPath)
            }
        }
        try VaultDirectory.removeTree(Rekey.newGroups, in: directory, path: path)
        var leftovers = [VaultMarker.fileName + Rekey.newSuffix]
        if newKeyFile == nil {
            leftovers += [MasterKeyFile.fileName + Rekey.newSuffix, MasterKeyFile.alwaysKeyFileName + Rekey.newSuffix]
        }
        for name in leftovers + [RekeyJournal.fileName] {
            _ = try AtomicFile.remove(name, in: directory, directoryPath: path)
        }
        return nil
    }
}
