import VaultCrypto
import VaultSystem

/// The upgrade of a vault of the old format 1 (read by `FormatOneVault`) to the current format,
/// crash-safe as a rekey that writes a new groups directory (docs/FORMAT.md, "Upgrade from format 1"):
/// 0. `rekey.journal` (both tags under the same `always` key: the key does not change; for a vault
///    whose key is in an external file, a journal that names it, so that recovery leaves it alone);
/// 1. `VAULT.new` (version 2) and `classes.key.new` (new item class keys);
/// 2. `groups.new/`: every item, each group private with a new `group.key` and `.lock`;
/// 3. one `syncfs`, then the commit point: `groups` is renamed `groups.old`;
/// 4. the renames of `Rekey.renames`, then `groups.old` and the journal go.
/// Every item is read and checked before step 0, so that a refusal changes nothing. Recovery is the
/// rekey's (`VaultStore.finishInterruptedRekey`), run by every open.
extension VaultStore {
    /// What the upgrade reads of an item's plaintext with the layer above's record format: its version,
    /// and its canonical primary key, which names its file under the new index keys; nil for a
    /// plaintext that is no valid record.
    package typealias ItemRecordReader = (_ plaintext: [UInt8]) -> (version: ItemVersion, primaryKey: [UInt8])?

    /// Converts the format-1 vault at `path` to the current format, holding its lock; the master key
    /// stays where it is (`master.key`, or the external file of `keySource`). Returns false, changing
    /// nothing, when the vault is current already (another process may have upgraded it). Needs the
    /// master key: a passphrase vault opened without its passphrase (or only through the unlock cache)
    /// is `locked`. A damaged item stops it before anything is written, named.
    package static func upgrade(
        at path: String, keySource: KeySource, records: ItemRecordReader
    ) throws(StoreError) -> Bool {
        let location = FilePath(path)
        let directory = try VaultDirectory.open(location)
        defer { try? directory.close() }
        return try withVaultLock(directory: directory, path: location) { (_) throws(StoreError) -> Bool in
            // Under the lock: a journal left by an upgrade that stopped after another process looked.
            if try VaultDirectory.exists(RekeyJournal.fileName, in: directory, path: location) {
                _ = try recoverRekey(directory: directory, path: location, keySource: keySource)
            }
            let markerPath = location / VaultMarker.fileName
            guard let markerBytes = try readMarker(in: directory, path: markerPath),
                FormatOneVault.isFormatOne(markerBytes)
            else { return false }
            let classKeys = try loadClassKeys(
                directory: directory, path: location, markerBytes: markerBytes, keySource: keySource)
            guard classKeys.master != nil else {
                throw StoreError(
                    .locked,
                    "the upgrade of the vault at \(path) needs its master key: give its passphrase (the keys that "
                        + "`vault unlock` cached do not hold it)")
            }
            let marker = try VaultMarker.decode(markerBytes, key: classKeys.always, path: markerPath)
            let groupsPath = location / groupsDirectoryName
            let groups = try VaultDirectory.openSubdirectory(groupsDirectoryName, in: directory, path: groupsPath)
            defer { try? groups.close() }
            let old = FormatOneVault(
                location: location, groupsDirectory: groups, classKeys: classKeys, vaultID: marker.vaultID)
            let items = try readItems(of: old, records: records)
            let target = try prepareUpgrade(
                directory: directory, location: location, vaultID: marker.vaultID, classKeys: classKeys,
                keyFile: keySource.keyFile.map { $0.hasPrefix("/") ? $0 : (try? FileDescriptor.resolvedPath($0)) ?? $0 }
            )
            defer { target.close() }
            for (group, item) in items {
                try item.plaintext.withBytes { (bytes) throws(StoreError) in
                    let id = try target.itemID(group: group, primaryKey: item.primaryKey)
                    try target.write(
                        bytes, to: ItemLocation(group: group, id: id), protectionClass: item.protectionClass,
                        version: item.version)
                }
            }
            try commitUpgrade(directory: directory, location: location, keyFileRekey: keySource.keyFile != nil)
            forgetUnlockedKeys(vaultID: marker.vaultID, location: location)
            return true
        }
    }

    /// Every item of `old`, read and checked, with its group. Where a move that a writer left
    /// half-done put the same item twice in a group, the later generation is kept.
    private static func readItems(of old: FormatOneVault, records: ItemRecordReader) throws(StoreError)
        -> [(group: GroupName, item: FormatOneVault.Item)]
    {
        var all: [(group: GroupName, item: FormatOneVault.Item)] = []
        for group in try old.groups() {
            var indexByPersistentID: [[UInt8]: Int] = [:]
            var items: [FormatOneVault.Item] = []
            for item in try old.items(in: group, records: records) {
                if let index = indexByPersistentID[item.version.persistentID] {
                    if items[index].version.generation < item.version.generation { items[index] = item }
                    continue
                }
                indexByPersistentID[item.version.persistentID] = items.count
                items.append(item)
            }
            all += items.map { (group, $0) }
        }
        return all
    }

    /// Steps 0 and 1, and an empty `groups.new`.
    private static func prepareUpgrade(
        directory: FileDescriptor, location: FilePath, vaultID: [UInt8], classKeys: ClassKeys, keyFile: String?
    ) throws(StoreError) -> UpgradeTarget {
        // A groups.old already there (a rename by hand, an older build's leftover) would make the commit
        // rename fail after the journal is written, and recovery then roll onto it; a master.key.new or
        // always.key.new would be renamed over the vault's key at the commit (the upgrade writes none):
        // refuse first.
        for name in [
            Rekey.oldGroups, MasterKeyFile.fileName + Rekey.newSuffix, AlwaysKeyFile.fileName + Rekey.newSuffix,
        ]
        where try VaultDirectory.exists(name, in: directory, path: location) {
            let leftover = location / name
            throw StoreError(
                .integrity,
                "\(leftover) exists and no rekey or upgrade is under way: move it away (it may be left from an earlier "
                    + "rekey) before the upgrade; nothing was changed",
                path: leftover.string)
        }
        // 0. The journal: recovery acts on it alone.
        let journal = try RekeyJournal(vaultID: vaultID, newKeyFile: keyFile).encoded(
            oldAlways: classKeys.always, newAlways: classKeys.always)
        try AtomicFile.replace(RekeyJournal.fileName, contents: .plain(journal), in: directory, directoryPath: location)
        // 1. The new marker and item class keys, beside the old files.
        let marker = try VaultMarker(vaultID: vaultID, hasItemClassKeys: true).encoded(key: classKeys.always)
        try AtomicFile.replace(
            VaultMarker.fileName + Rekey.newSuffix, contents: .plain(marker), in: directory, directoryPath: location,
            permissions: .ownerWriteAllRead)
        let itemClassKeys = try ItemClassKeyFile.random()
        try ItemClassKeyFile.write(
            itemClassKeys, under: classKeys, vaultID: vaultID, in: directory, vaultPath: location,
            name: ItemClassKeyFile.fileName + Rekey.newSuffix)
        // 2. A groups.new left by an earlier attempt goes first.
        let newGroupsPath = location / Rekey.newGroups
        try? VaultDirectory.removeTree(Rekey.newGroups, in: directory, path: location)
        do {
            try directory.makeDirectoryAt(Rekey.newGroups, permissions: .ownerAll)
        } catch {
            throw StoreError.system(error, .mkdir, "create", path: newGroupsPath)
        }
        return UpgradeTarget(
            location: location, vaultID: vaultID, classKeys: classKeys, itemClassKeys: itemClassKeys,
            groupsDirectory: try VaultDirectory.openSubdirectory(Rekey.newGroups, in: directory, path: newGroupsPath))
    }

    /// After the items: one `syncfs`, 3. the commit point, then 4. the switch.
    private static func commitUpgrade(directory: FileDescriptor, location: FilePath, keyFileRekey: Bool)
        throws(StoreError)
    {
        do {
            try directory.syncFileSystem()
        } catch {
            throw StoreError.system(error, .fsync, "syncfs", path: location)
        }
        do {
            try directory.renameAt(groupsDirectoryName, to: Rekey.oldGroups)
        } catch {
            throw StoreError.system(error, .rename, "rename the groups directory of", path: location)
        }
        do {
            try directory.sync()
        } catch {
            throw StoreError.system(error, .fsync, "rename the groups directory of", path: location)
        }
        try rollForward(directory: directory, path: location, keyFileRekey: keyFileRekey)
    }
}
