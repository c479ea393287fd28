import VaultSystem

/// The durable write of one item file, the heart of the write protocol (docs/FORMAT.md, Writes):
/// through the group's spare (`SpareFile`: pwrite, fdatasync, close, exchange) or a temp file (write,
/// fsync, close, rename), then the generation record (`GenerationRecord`: symlink and rename, or an
/// unlink), then the one fsync of the directory, then the spare zeroed. Two flushes, no more.
struct ItemWrite {
    /// The item's sealed file.
    let contents: [UInt8]
    /// The item's file name in its group directory.
    let name: String
    /// The generation record to leave: its text, or nil to remove one that is there.
    let record: (name: String, text: String?)?
    /// Whether to flush at all (false while bulk loading: one `syncfs` at the end instead).
    let durable: Bool
    /// Whether to go through the group's spare (the write lock allows it).
    let reusingSpare: Bool
    /// The item file's mode: 0600, or 0660 in a shared group.
    var permissions: FilePermissions = .ownerReadWrite
    /// The history the write keeps: the replaced file as a version, the oldest one pruned.
    var history: ItemHistory.Step? = nil

    /// Whether the group is shared (its items' mode says so): the spare is then this user's own
    /// (`SpareFile`).
    var shared: Bool { permissions == .ownerAndGroupReadWrite }

    /// Runs the write; false when the version it pruned stays behind (best effort, see `ItemHistory`).
    @discardableResult
    func run(in directory: FileDescriptor, directoryPath: FilePath) throws(StoreError) -> Bool {
        if durable, reusingSpare, let spare = SpareFile.open(in: directory, shared: shared) {
            try spare.write(contents, for: name, in: directory, directoryPath: directoryPath)
            let kept: Bool
            do {
                kept = try history?.keepPrevious(of: name, in: directory, directoryPath: directoryPath) ?? false
            } catch {
                try? directory.unlinkAt(spare.name)
                throw error
            }
            try spare.exchange(with: name, in: directory, directoryPath: directoryPath)
            let pruned = history?.dropPruned(afterKeeping: kept, spareName: spare.name, in: directory) ?? true
            do {
                try finish(in: directory, directoryPath: directoryPath)
            } catch {
                // The exchange may not be durable: the spare may still be the item's file on disk, so it
                // must not be written in place. Removing it is safe either way (journal order).
                try? directory.unlinkAt(spare.name)
                throw error
            }
            spare.scrub(in: directory, shared: shared)
            return pruned
        }
        let temporary = try AtomicFile.writeTemporary(
            .plain(contents), in: directory, directoryPath: directoryPath, permissions, durable: durable)
        do {
            _ = try history?.keepPrevious(of: name, in: directory, directoryPath: directoryPath)
        } catch {
            try? directory.unlinkAt(temporary)
            throw error
        }
        try AtomicFile.rename(temporary, to: name, in: directory, directoryPath: directoryPath)
        let pruned = history?.prune(in: directory) ?? true
        try finish(in: directory, directoryPath: directoryPath)
        return pruned
    }

    /// After the new file took its name: the generation record, then the one directory fsync. The record
    /// is metadata only and shares that fsync; the file is in place, so the directory is synced even
    /// when the record fails, and then that failure is reported.
    private func finish(in directory: FileDescriptor, directoryPath: FilePath) throws(StoreError) {
        var pending: StoreError?
        if let (recordName, text) = record {
            do throws(StoreError) {
                if let text {
                    try AtomicFile.replaceSymbolicLink(
                        recordName, target: text, in: directory, directoryPath: directoryPath)
                } else {
                    try AtomicFile.removeIfPresent(recordName, in: directory, directoryPath: directoryPath)
                }
            } catch {
                pending = error
            }
        }
        if durable { try AtomicFile.syncDirectory(directory, path: directoryPath) }
        if let pending { throw pending }
    }
}
