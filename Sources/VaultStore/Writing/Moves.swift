import VaultSystem

/// The move protocol: an update that changes an item's primary key or group writes the item under a
/// new id and removes the old file. Until the old file is gone both exist with one persistent id, so:
/// 1. the old item's generation record is replaced with the text `moving`;
/// 2. the intent note `.move.<old id>` is written in the old item's directory (`MoveIntent`; its
///    directory fsync makes the mark durable too);
/// 3. the new item is written (`ItemWrite`);
/// 4. the old item and its record are removed;
/// 5. the note is removed.
/// A reader that finds the mark looks for the note (so ordinary reads cost no extra look-up), and
/// hides the old file when the note names a file with the same persistent id and a higher generation
/// (`isMovedAway`). The next writer after a crash finishes or undoes each move by its note
/// (`finishInterruptedMoves`). While an item is marked its rollback check is off; an item whose move
/// was undone (the new file never appeared) stays marked until its next write.
extension VaultStore {
    /// Steps 1 and 2: the mark, then the intent note.
    func beginMove(_ intent: MoveIntent) throws(StoreError) {
        // Counted before the note is made: one whose making failed half-way may be there all the same.
        transactionState.withLock { $0.openMoves[intent.source.group, default: 0] += 1 }
        let directory = try existingGroupDirectory(intent.source.group)
        let directoryPath = groupPath(intent.source.group)
        try AtomicFile.replaceSymbolicLink(
            GenerationRecord.name(intent.source.id), target: GenerationRecord.movingText, in: directory,
            directoryPath: directoryPath)
        try AtomicFile.replace(
            MoveIntent.noteName(intent.source.id), contents: .plain(intent.contents), in: directory,
            directoryPath: directoryPath, permissions: memberFilePermissions(intent.source.group))
    }

    /// Step 5: the intent note goes (no error when it is gone).
    func endMove(of source: ItemLocation) throws(StoreError) {
        guard let directory = try groupDirectory(source.group, create: false) else { return }
        _ = try AtomicFile.remove(MoveIntent.noteName(source.id), in: directory, directoryPath: groupPath(source.group))
        transactionState.withLock { state in
            if let open = state.openMoves[source.group] {
                state.openMoves[source.group] = open > 1 ? open - 1 : nil
            }
        }
    }

    /// Whether the marked item `item` (at `version`) is the old half of a move: its intent note names a
    /// file with the same persistent id and a higher generation. A missing note, or a destination that
    /// cannot be read, says no; a note that cannot be looked at is an error ("no move in progress" must
    /// not be guessed).
    @usableFromInline
    func isMovedAway<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, _ version: ItemVersion,
        decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> Bool {
        let note = try Failure.converting { () throws(StoreError) in try readMoveIntent(of: item) }
        guard let note, let destination = MoveIntent.destination(note),
            let moved = try? readVerified(destination, decoding: decode)
        else { return false }
        return version.isSuperseded(by: moved.record.version)
    }

    /// The text of the intent note of a move of `item`, or nil when there is none; read without the
    /// lock (a note is replaced atomically). Notes are rare: a stat (no descriptor to open and close)
    /// answers the common case.
    func readMoveIntent(of item: ItemLocation) throws(StoreError) -> [UInt8]? {
        guard let directory = try groupDirectory(item.group, create: false) else { return nil }
        let name = MoveIntent.noteName(item.id)
        let path = groupPath(item.group) / name
        do {
            _ = try directory.statusAt(name)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StoreError.system(error, .stat, "inspect", path: path)
        }
        return try SmallFile.readIfPresent(name, in: directory, path: path, limit: MoveIntent.maximumByteCount)
    }

    /// Finishes the moves that a writer which died left half-done, under the lock: where the new file
    /// exists with the same persistent id and a higher generation, the old file (and its record) is
    /// removed; otherwise the old file stays. Every note goes. Needs the store's version reader; a store
    /// opened without one has no moves to finish.
    func finishInterruptedMoves(in transaction: WriteTransaction, groups only: Set<GroupName>? = nil)
        throws(StoreError)
    {
        guard let versions else { return }
        let decode = { (plaintext: [UInt8], path: () -> String) throws(StoreError) -> DecodedVersion in
            guard let version = versions(plaintext) else {
                throw StoreError(.integrity, "\(path()) does not decode", path: path())
            }
            return DecodedVersion(version: version)
        }
        let groups: [GroupName]
        if let only { groups = only.sorted() } else { groups = try self.groups() }
        for group in groups {
            for (name, contents) in try moveIntents(in: group) {
                let source = MoveIntent.itemID(fromNoteName: name).map { ItemLocation(group: group, id: $0) }
                defer {
                    let removed = (try? groupDirectory(group, create: false)).flatMap { directory in
                        try? AtomicFile.remove(name, in: directory, directoryPath: groupPath(group))
                    }
                    if removed == nil { noteLeftBehind(group) }
                }
                guard let source, let destination = MoveIntent.destination(contents) else { continue }
                guard let old = try? readFile(source, decoding: decode),
                    let new = try? readFile(destination, decoding: decode),
                    old.version.isSuperseded(by: new.version)
                else { continue }
                _ = try transaction.delete(source, deletedAt: old.version.generation + 1)
            }
        }
    }

    /// The intent notes of `group` with their texts, by name.
    private func moveIntents(in group: GroupName) throws(StoreError) -> [(name: String, contents: [UInt8])] {
        guard let directory = try groupDirectory(group, create: false) else { return [] }
        let names: [String]
        do {
            names = try directory.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
        }
        // The same listing serves the group's first cleanup: this runs under its lock.
        removeStaleTemporaryFiles(group: group, directory: directory, listed: names)
        var result: [(name: String, contents: [UInt8])] = []
        // The few intents sorted, not the whole listing (every item file of the group).
        for name in names.filter({ $0.hasPrefix(MoveIntent.prefix) }).sorted() {
            let path = groupPath(group) / name
            if let contents = try SmallFile.readIfPresent(
                name, in: directory, path: path, limit: MoveIntent.maximumByteCount)
            {
                result.append((name, contents))
            }
        }
        return result
    }
}

/// A plaintext's version alone, as the store's version reader gives it.
struct DecodedVersion: VersionedRecord {
    let version: ItemVersion
}
