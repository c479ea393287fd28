import VaultCrypto
import VaultSystem

/// The rekey of a vault: a new master key, and every key file sealed again under it, in
/// place. No item file and no directory changes (services bind-mount group directories and members
/// hold them open): items are sealed under the group keys and the item class keys, which stay; only
/// what seals those changes.
///
/// 0. `rekey.journal`, flagged in place, authenticated under the old and the new keys;
/// 1. `VAULT.new` first (while it exists, the rekey has not reached its commit point), then
///    `master.key.new` (and `always.key.new`) for a rekey of `master.key`, and `classes.key.new`;
/// 2. `group.key.new` in every group directory: the same group keys, sealed for the owner under the
///    new `always` key (a shared group's member part and MAC follow, so members read it as before);
/// 3. the commit point: `VAULT.new` is renamed `VAULT`;
/// 4. each `group.key.new` → `group.key`, the key files' `.new` → their names, the journal removed.
/// Recovery with an authentic journal rolls back while `VAULT.new` exists (the `.new` files go), and
/// forward otherwise (the remaining renames).
extension VaultStore {
    static let newGroupKeyFileName = GroupKeyFile.fileName + Rekey.newSuffix

    /// Steps 0 to 4, under the vault's lock and every group's.
    func rekeyInPlace(to destination: RekeyDestination, _ masterKey: SymmetricKey) throws(StoreError) {
        let oldKeys = try ownerClassKeys("rekey it")
        guard let itemClassKeys, itemClassKeys.afterFirstUnlock != nil, itemClassKeys.whenUnlocked != nil else {
            throw StoreError(.locked, "rekey needs the vault's passphrase (it was opened without it)")
        }
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in
            // The settings as they are now (another handle may have changed them since this one opened).
            let current = try requireCurrentKeys()
            // Every group's key, opened as the owner, before anything is written: one that does not open
            // stops the rekey with nothing changed. Whatever is under `group.key.new` goes first (a
            // member's plant, or an earlier attempt's file, which a roll-forward must never take).
            var groupFiles: [(group: GroupName, file: GroupKeyFile, directory: FileDescriptor)] = []
            for group in try groups() {
                guard let directory = try groupDirectory(group, create: false) else { continue }
                if try VaultDirectory.exists(Self.newGroupKeyFileName, in: directory, path: groupPath(group)) {
                    try VaultDirectory.removeTree(Self.newGroupKeyFileName, in: directory, path: groupPath(group))
                    try AtomicFile.syncDirectory(directory, path: groupPath(group))
                }
                let loaded: GroupKeyFile?
                do throws(StoreError) {
                    loaded = try loadGroupKeyFile(group)
                } catch
                    where (error.code == .integrity || error.code == .missingKey)
                    && error.path == (groupPath(group) / GroupKeyFile.fileName).string
                {
                    // A damaged or planted key file: sealed again under the new key it could never be, so
                    // the group's items would be lost with the old key.
                    throw StoreError(
                        error.code,
                        "\(error.message); vault will not rekey a vault with a group it cannot open (nothing was "
                            + "changed): restore the file from a backup, or remove group \(group) with "
                            + "`vault group rm \(group) --force` if its items may go",
                        path: error.path, cause: error)
                }
                guard let file = loaded else {
                    try refuseItemsWithoutKey(
                        group,
                        "vault will not rekey a vault with a group it cannot open (nothing was changed); restore the "
                            + "file from a backup, or remove group \(group) with `vault group rm \(group) --force` if "
                            + "its items may go")
                    continue
                }
                groupFiles.append((group, file, directory))
            }
            let (newMaster, newKeyFile) = try newMasterKey(for: destination, current: masterKey)
            let newKeys = try ClassKeys(master: newMaster)
            // 0. The journal.
            let journal = try RekeyJournal(vaultID: vaultID, newKeyFile: newKeyFile, inPlace: true).encoded(
                oldAlways: oldKeys.always, newAlways: newKeys.always)
            try AtomicFile.replace(
                RekeyJournal.fileName, contents: .plain(journal), in: directory, directoryPath: location)
            // 1. VAULT.new, then the key files. A vault made before classes.key existed gets one here: its
            // class keys are its item class keys (`itemClassKeys`), now sealed under the new class keys.
            let marker = try VaultMarker(
                vaultID: vaultID, hasItemClassKeys: true, versionsKept: current?.versionsKept ?? 0
            ).encoded(key: newKeys.always)
            try AtomicFile.replace(
                VaultMarker.fileName + Rekey.newSuffix, contents: .plain(marker), in: directory,
                directoryPath: location, permissions: .ownerWriteAllRead)
            try writeNewKeyFiles(for: destination, newMaster, newKeys)
            try ItemClassKeyFile.write(
                itemClassKeys, under: newKeys, vaultID: vaultID, in: directory, vaultPath: location,
                name: ItemClassKeyFile.fileName + Rekey.newSuffix)
            // 2. Every group's key, sealed again (each write is durable: file, then its directory).
            for (group, file, groupDirectory) in groupFiles {
                let encoded = try file.encoded(
                    group: group, vaultID: vaultID,
                    sealKey: try GroupKeyFile.sealKey(always: newKeys.always, groupID: file.groupID))
                try AtomicFile.replace(
                    Self.newGroupKeyFileName, contents: .secret(encoded), in: groupDirectory,
                    directoryPath: groupPath(group), permissions: file.isShared ? .ownerWriteGroupRead : .ownerReadWrite
                )
            }
            // 3. The commit point.
            do throws(Errno) {
                try directory.renameAt(VaultMarker.fileName + Rekey.newSuffix, to: VaultMarker.fileName)
            } catch {
                throw StoreError.system(error, .rename, "rename VAULT.new in", path: location)
            }
            try AtomicFile.syncDirectory(directory, path: location)
            // 4.
            try Self.rollForwardInPlace(directory: directory, path: location, keyFileRekey: newKeyFile != nil)
        }
        keyCache.withLock {
            $0.groupKeys.removeAll()
            $0.groupKeyInodes.removeAll()
        }
    }

    /// Recovery of an interrupted in-place rekey (its journal authentic), under the vault's lock;
    /// returns whether it was rolled forward.
    static func recoverRekeyInPlace(directory: FileDescriptor, path: FilePath, keyFileRekey: Bool) throws(StoreError)
        -> Bool
    {
        if try VaultDirectory.exists(VaultMarker.fileName + Rekey.newSuffix, in: directory, path: path) {
            try rollBackInPlace(directory: directory, path: path, keyFileRekey: keyFileRekey)
            return false
        }
        try rollForwardInPlace(directory: directory, path: path, keyFileRekey: keyFileRekey)
        return true
    }

    /// After the commit point: the group key files, then the vault's key files, take their names. In a
    /// shared directory a member can make the rename fail (a directory under `group.key`): that group
    /// keeps its old `group.key`, whose members' part the owner still reads (`loadGroupKeyFile`), and the
    /// rest of the vault goes on; a private group's failure stops the roll-forward (the journal stays and
    /// the next open tries again), since nothing else could open that group afterwards.
    static func rollForwardInPlace(directory: FileDescriptor, path: FilePath, keyFileRekey: Bool) throws(StoreError) {
        try forEachGroupDirectory(directory: directory, path: path) {
            (groupDirectory, groupPath, owner, shared) throws(StoreError) in
            do throws(StoreError) {
                try renameNewGroupKeyFile(in: groupDirectory, path: groupPath, owner: owner)
            } catch {
                // What a member's plant makes of the rename (a directory, or a non-directory where one is
                // expected) ends there; anything else (an I/O error) is retried by the next open.
                let planted: Set<Errno> = [.isDirectory, .notDirectory, .directoryNotEmpty, .fileExists]
                guard shared, let errno = error.errno, planted.contains(errno) else { throw error }
            }
        }
        let renames = Array(
            (keyFileRekey ? Rekey.renames.prefix(Rekey.keyFileRekeyRenameCount) : Rekey.renames[...]).dropFirst())
        for (source, destination) in renames where try VaultDirectory.exists(source, in: directory, path: path) {
            do throws(Errno) {
                try directory.renameAt(source, to: destination)
            } catch {
                throw StoreError.system(error, .rename, "rename \(source) in", path: path)
            }
        }
        try AtomicFile.syncDirectory(directory, path: path)
        _ = try AtomicFile.remove(RekeyJournal.fileName, in: directory, directoryPath: path)
    }

    /// `group.key.new` → `group.key` in one group directory, when it is the owner's.
    private static func renameNewGroupKeyFile(
        in groupDirectory: FileDescriptor, path groupPath: FilePath, owner: UInt32
    )
        throws(StoreError)
    {
        let status: FileStatus
        do throws(Errno) {
            status = try groupDirectory.statusAt(newGroupKeyFileName)
        } catch {
            if error == .noSuchFileOrDirectory { return }
            throw StoreError.system(error, .stat, "inspect", path: groupPath / newGroupKeyFileName)
        }
        // In a shared directory a member may have put a file of its own under the name: only the
        // owner's counts. Another is removed (the group keeps its old key file).
        guard status.kind == .regular, status.linkCount == 1, status.ownerID == owner else {
            try? groupDirectory.unlinkAt(newGroupKeyFileName)
            return
        }
        do throws(Errno) {
            try groupDirectory.renameAt(newGroupKeyFileName, to: GroupKeyFile.fileName)
        } catch {
            throw StoreError.system(error, .rename, "rename \(newGroupKeyFileName) in", path: groupPath)
        }
        try AtomicFile.syncDirectory(groupDirectory, path: groupPath)
    }

    /// Before the commit point: every `.new` file goes (a rekey to a new key file made none of the key
    /// files in the vault: a `master.key.new` there is not its own).
    private static func rollBackInPlace(directory: FileDescriptor, path: FilePath, keyFileRekey: Bool)
        throws(StoreError)
    {
        try forEachGroupDirectory(directory: directory, path: path) {
            (groupDirectory, groupPath, _, _) throws(StoreError) in
            do throws(Errno) {
                try groupDirectory.unlinkAt(newGroupKeyFileName)
            } catch {
                // Nothing there, or a directory a member made under the name (never the rekey's): left.
                if error == .noSuchFileOrDirectory || error == .isDirectory { return }
                throw StoreError.system(error, .unlink, "remove", path: groupPath / newGroupKeyFileName)
            }
            try AtomicFile.syncDirectory(groupDirectory, path: groupPath)
        }
        var leftovers = [ItemClassKeyFile.fileName + Rekey.newSuffix]
        if !keyFileRekey {
            leftovers += [MasterKeyFile.fileName + Rekey.newSuffix, AlwaysKeyFile.fileName + Rekey.newSuffix]
        }
        // VAULT.new last: while it is there, recovery still knows the rekey was not committed.
        for name in leftovers + [VaultMarker.fileName + Rekey.newSuffix, RekeyJournal.fileName] {
            _ = try AtomicFile.remove(name, in: directory, directoryPath: path)
        }
    }

    /// Runs `body` with each group directory of the vault in `directory` (opened as its owner would),
    /// its path, the vault owner's uid, and whether the group is shared (its directory 2770).
    private static func forEachGroupDirectory(
        directory: FileDescriptor, path: FilePath,
        _ body: (FileDescriptor, FilePath, UInt32, Bool) throws(StoreError) -> Void
    ) throws(StoreError) {
        let groupsPath = path / groupsDirectoryName
        let groups = try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
        defer { try? groups.close() }
        let names: [String]
        do {
            names = try groups.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupsPath)
        }
        let owner: UInt32
        do {
            owner = try directory.status().ownerID
        } catch {
            throw StoreError.system(error, .stat, "inspect", path: path)
        }
        for name in names.sorted() {
            guard (try? GroupName(name)) != nil else { continue }
            let groupPath = groupsPath / name
            let fd = try VaultDirectory.openGroupDirectory(name, in: groups, path: groupPath, owner: owner)
            defer { try? fd.close() }
            let shared = (try? fd.status())?.permissions.rawValue == FilePermissions.sharedDirectory.rawValue
            try body(fd, groupPath, owner, shared)
        }
    }
}
