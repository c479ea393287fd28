import VaultCrypto
import VaultSystem

/// Rotation of the master key: a new key, every key file sealed again under it in place
/// (`RekeyInPlace.swift`), and the recovery of an interrupted rekey or upgrade. A crash at any point
/// leaves a vault that opens (with the old key or the new one) with every item.
enum Rekey {
    static let newSuffix = ".new"
    static let oldGroups = VaultStore.groupsDirectoryName + ".old"
    static let newGroups = VaultStore.groupsDirectoryName + ".new"
    /// The renames after the commit point of an upgrade (or of an older build's rekey, which wrote a
    /// new groups directory too); one to a new key file does only the first three (it made no key file
    /// in the vault).
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
    /// A new external key file (see `ExternalKeyFile.prepareNew`).
    case keyFile(String)
}

extension VaultStore {
    /// Rotates the master key: a new random key, and every key file (`classes.key`, each group's
    /// `group.key`) sealed again under it, in place; no item file changes (`rekeyInPlace`).
    /// `newPassphrase` wraps the new key (nil: a plain `master.key`). Needs the master key (opened with
    /// the passphrase or a key file); a vault whose key is in an external file is rekeyed with
    /// `rekey(newKeyFile:keySource:)`. The store is stale afterwards: open the vault again. A failure
    /// at any step leaves a vault that `open` recovers (rolled back before the commit point, forward
    /// after it).
    package func rekey(
        newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate, keySource: KeySource
    ) throws(StoreError) {
        if let keyFile = keySource.keyFile {
            throw StoreError(
                .invalidName,
                "the key of the vault at \(path) is in the external file \(keyFile); rekey it to a new key file with "
                    + "--new-key-file PATH")
        }
        try rekey(to: .masterKey(passphrase: newPassphrase, limits: limits))
    }

    /// Rotates the master key of a vault whose key is in an external key file (opened with it:
    /// `keySource.keyFile`): the new key goes to `newKeyFile`, a new file (0600, created exclusively
    /// and durably in an existing directory) or an existing 32-byte key file made by the operator (refused
    /// when group or others can read it). Crash-safe as the rekey of `master.key`: the journal names
    /// the new key file (its path, never the key), so that an interrupted rekey is finished or undone
    /// by the next open with the old key file, the new one, or neither; afterwards the vault opens
    /// with the new key file only. The old key file is left in place (a service may still be started
    /// with it until its unit names the new one). The store is stale afterwards.
    package func rekey(newKeyFile: String, keySource: KeySource) throws(StoreError) {
        guard keySource.keyFile != nil else {
            throw StoreError(
                .invalidName,
                "the vault at \(path) keeps its key in master.key, not in an external key file; run `vault rekey` "
                    + "without --new-key-file")
        }
        try rekey(to: .keyFile(newKeyFile))
    }

    private func rekey(to destination: RekeyDestination) throws(StoreError) {
        _ = try ownerClassKeys("rekey it")
        guard let masterKey else {
            throw StoreError(.locked, "rekey needs the vault's passphrase (it was opened without it)")
        }
        try rekeyInPlace(to: destination, masterKey)
        forgetUnlockedKeys()
    }

    /// Removes the keys cached by `vault unlock`: they belong to the old master key after a rekey.
    private func forgetUnlockedKeys() { Self.forgetUnlockedKeys(vaultID: vaultID, location: location) }

    /// Removes the keys `vault unlock` cached for the vault `vaultID` at `location`.
    static func forgetUnlockedKeys(vaultID: [UInt8], location: FilePath) {
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
    static func recoverRekey(directory: FileDescriptor, path: FilePath, keySource: KeySource)
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
