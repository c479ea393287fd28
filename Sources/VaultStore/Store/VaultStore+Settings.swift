import VaultSystem

/// The vault's settings, kept in its marker (`VaultMarker`) so that every opener, members included,
/// reads them with the vault id: how many versions of each item to keep.
extension VaultStore {
    /// The most versions of each item a vault can keep.
    package static let maximumVersionsKept = ItemHistory.maximumVersionsKept

    /// Sets how many previous versions of each item the vault keeps (0: none; nil: the default), the
    /// owner only, under the whole-vault lock; versions past the new bound are removed at once. Other
    /// handles keep the bound they read until they are opened again (a rekey keeps the setting as it is
    /// on disk).
    package func setVersionsKept(_ count: Int?) throws(StoreError) {
        if let count, !(0...ItemHistory.maximumVersionsKept).contains(count) {
            throw StoreError(
                .invalidName,
                "a vault keeps from 0 to \(ItemHistory.maximumVersionsKept) versions of each item, not \(count); "
                    + "nothing was changed")
        }
        let classKeys = try ownerClassKeys("change how many versions it keeps")
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in
            // The owner's store has the class keys, so the marker as it is now is there.
            guard var marker = try requireCurrentKeys() else { return }
            marker.versionsKept = count.map { UInt8($0 + 1) } ?? 0
            try AtomicFile.replace(
                VaultMarker.fileName, contents: .plain(try marker.encoded(key: classKeys.always)), in: directory,
                directoryPath: location, permissions: .ownerWriteAllRead)
            versionsKeptSetting.store(marker.versionsKept, ordering: .relaxed)
            for group in try groups() {
                guard let groupDirectory = try groupDirectory(group, create: false) else { continue }
                let names: [String]
                do throws(Errno) {
                    names = try groupDirectory.entryNames()
                } catch {
                    throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
                }
                pruneHistory(names, in: groupDirectory, exactly: true)
                try AtomicFile.syncDirectory(groupDirectory, path: groupPath(group))
            }
        }
    }
}
