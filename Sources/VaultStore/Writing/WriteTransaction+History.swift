import VaultSystem

/// The writes of an item's history (`ItemHistory`): a delete that leaves a tombstone, and a purge.
extension WriteTransaction {
    /// Removes `item`, keeping it in its history: `tombstone` (the layer above's record of the
    /// deletion, at `version`, the generation after the item's) is sealed into the item's next version
    /// file, the item's file becomes its previous version, and the generation record is left at the
    /// tombstone (so that an item made again under the name carries on the numbering). False when the
    /// item did not exist. A fleet group's replica keeps the history; a vault that keeps none removes
    /// the item outright.
    package func delete(
        _ item: ItemLocation, leaving tombstone: [UInt8], protectionClass: ProtectionClass, version: ItemVersion
    ) throws(StoreError) -> Bool {
        try requireLocked(item.group)
        if let replica = try store.replica(for: item.group) {
            return try deleteReplicated(
                item, leaving: tombstone, protectionClass: protectionClass, version: version, replica)
        }
        guard let step = ItemHistory.Step(item.id, writing: version.generation, kept: store.versionsKept),
            let directory = try store.groupDirectory(item.group, create: false)
        else { return try delete(item) }
        let directoryPath = store.groupPath(item.group)
        do {
            _ = try directory.statusAt(item.id.fileName)
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, .stat, "inspect", path: store.itemPath(item))
        }
        let sealed = try store.seal(tombstone, as: item, protectionClass: protectionClass, version: version)
        store.removeStaleTemporaryFiles(group: item.group, directory: directory)
        // The tombstone first: a writer that dies after it leaves the item in place, and the tombstone,
        // numbered as the item's next version, is replaced by that version when it is written.
        let temporary = try AtomicFile.writeTemporary(
            .plain(sealed.contents), in: directory, directoryPath: directoryPath,
            sealed.keys.isShared ? .ownerAndGroupReadWrite : .ownerReadWrite, durable: true)
        try AtomicFile.rename(
            temporary, to: ItemHistory.name(item.id, generation: version.generation), in: directory,
            directoryPath: directoryPath)
        do {
            try directory.renameAt(item.id.fileName, to: step.version)
            // A rename between two names of one file (a writer that died after linking the version)
            // changes nothing: the item's name must still go.
            try? directory.unlinkAt(item.id.fileName)
        } catch {
            throw StoreError.system(error, .rename, "keep the last version of", path: store.itemPath(item))
        }
        var pending: StoreError?
        if let recordText = sealed.recordText {
            do throws(StoreError) {
                try AtomicFile.replaceSymbolicLink(
                    GenerationRecord.name(item.id), target: recordText, in: directory, directoryPath: directoryPath)
            } catch {
                pending = error
            }
        }
        if !step.prune(in: directory) { store.noteLeftBehind(item.group) }
        try AtomicFile.syncDirectory(directory, path: directoryPath)
        if let pending { throw pending }
        return true
    }

    /// `delete(_:leaving:protectionClass:version:)` in a fleet group: the replica removes the item and
    /// keeps its cached file (current: the transaction brought the cache up to date) and the tombstone
    /// as its last versions, in one write; then the cache's copy goes.
    private func deleteReplicated(
        _ item: ItemLocation, leaving tombstone: [UInt8], protectionClass: ProtectionClass, version: ItemVersion,
        _ replica: any GroupReplica
    ) throws(StoreError) -> Bool {
        try store.requireUnchangedReplica(item.group)
        guard let directory = try store.groupDirectory(item.group, create: false),
            let previous = try store.cachedItemFile(item)
        else { return false }
        let sealed = try store.seal(tombstone, as: item, protectionClass: protectionClass, version: version)
        let history = ReplicaHistoryStep(
            writing: version.generation, versionsKept: store.versionsKept, previous: previous,
            tombstone: sealed.contents)
        try store.noticingConflicts { () throws(StoreError) in
            try replica.delete(item.id, history: history, cache: ReplicaCache(store: store, group: item.group))
        }
        do throws(StoreError) {
            _ = try AtomicFile.remove(
                item.id.fileName, in: directory, directoryPath: store.groupPath(item.group),
                alsoRemove: GenerationRecord.name(item.id))
        } catch {
            throw store.localHalfFailed(error, group: item.group, replica)
        }
        return true
    }

    /// `delete` in a group that keeps history: the item's file goes (kept as its last version when
    /// `deletedAt` says which it was: a sound item's), its versions stay, and its record says
    /// `deleted:<generation>` (no tag: no reader checks an absent item against it).
    func deleteKeepingHistory(_ item: ItemLocation, deletedAt: UInt64?, in directory: FileDescriptor)
        throws(StoreError) -> Bool
    {
        let directoryPath = store.groupPath(item.group)
        var number = deletedAt
        if number == nil, let newest = try store.versionGenerations(of: item).last { number = newest + 1 }
        do {
            if let deletedAt, deletedAt > 1 {
                // A sound item (a move's source): its file is kept as its last version.
                try directory.renameAt(item.id.fileName, to: ItemHistory.name(item.id, generation: deletedAt - 1))
                try? directory.unlinkAt(item.id.fileName)
            } else {
                try directory.unlinkAt(item.id.fileName)
            }
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, .unlink, "remove", path: store.itemPath(item))
        }
        var pending: StoreError?
        do throws(StoreError) {
            let record = GenerationRecord.name(item.id)
            if let number {
                try AtomicFile.replaceSymbolicLink(
                    record, target: GenerationRecord.deletedText(number), in: directory, directoryPath: directoryPath)
            } else {
                try AtomicFile.removeIfPresent(record, in: directory, directoryPath: directoryPath)
            }
        } catch {
            pending = error
        }
        try AtomicFile.syncDirectory(directory, path: directoryPath)
        if let pending { throw pending }
        return true
    }

    /// Removes `item` with every version of it and its generation record (`vault rm --purge`); the
    /// version files are zeroed first, as a spare is. False when none of it existed.
    package func purge(_ item: ItemLocation) throws(StoreError) -> Bool {
        try requireLocked(item.group)
        if let replica = try store.replica(for: item.group) { return try purgeReplicated(item, replica) }
        guard let directory = try store.groupDirectory(item.group, create: false) else { return false }
        let directoryPath = store.groupPath(item.group)
        let removed: Bool
        do {
            try directory.unlinkAt(item.id.fileName)
            removed = true
        } catch {
            guard error == .noSuchFileOrDirectory else {
                throw StoreError.system(error, .unlink, "remove", path: store.itemPath(item))
            }
            removed = false
        }
        let versions: [String]
        do {
            versions = try directory.entryNames().filter { ItemHistory.parse($0)?.id == item.id }
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: directoryPath)
        }
        let shared = (try? store.keys(for: item.group))?.isShared ?? false
        for name in versions {
            SpareFile.scrub(name, in: directory, shared: shared)
            do {
                try directory.unlinkAt(name)
            } catch {
                guard error == .noSuchFileOrDirectory else {
                    throw StoreError.system(error, .unlink, "remove", path: directoryPath / name)
                }
            }
        }
        try AtomicFile.removeIfPresent(GenerationRecord.name(item.id), in: directory, directoryPath: directoryPath)
        try AtomicFile.syncDirectory(directory, path: directoryPath)
        return removed || !versions.isEmpty
    }

    /// Removes `item`'s version file at `generation` (a damaged one, `vault check --remove-damaged`),
    /// zeroed first as a spare is; false when there was none.
    package func removeVersion(_ item: ItemLocation, generation: UInt64) throws(StoreError) -> Bool {
        try requireLocked(item.group)
        guard let directory = try store.groupDirectory(item.group, create: false) else { return false }
        let name = ItemHistory.name(item.id, generation: generation)
        let directoryPath = store.groupPath(item.group)
        SpareFile.scrub(name, in: directory, shared: (try? store.keys(for: item.group))?.isShared ?? false)
        do {
            try directory.unlinkAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return false }
            throw StoreError.system(error, .unlink, "remove", path: directoryPath / name)
        }
        try AtomicFile.syncDirectory(directory, path: directoryPath)
        return true
    }

    /// `purge` in a fleet group: the item goes from the replica (then the cache), then every version
    /// the replica keeps of it.
    private func purgeReplicated(_ item: ItemLocation, _ replica: any GroupReplica) throws(StoreError) -> Bool {
        try store.requireUnchangedReplica(item.group)
        let present = try store.cachedItemFile(item) != nil
        if present {
            try store.noticingConflicts { () throws(StoreError) in
                try replica.delete(item.id, history: nil, cache: ReplicaCache(store: store, group: item.group))
            }
            do throws(StoreError) {
                if let directory = try store.groupDirectory(item.group, create: false) {
                    _ = try AtomicFile.remove(
                        item.id.fileName, in: directory, directoryPath: store.groupPath(item.group),
                        alsoRemove: GenerationRecord.name(item.id))
                }
            } catch {
                throw store.localHalfFailed(error, group: item.group, replica)
            }
        }
        let versions = try replica.versionGenerations(of: item.id)
        if !versions.isEmpty { try replica.purgeVersions(of: item.id) }
        return present || !versions.isEmpty
    }
}
