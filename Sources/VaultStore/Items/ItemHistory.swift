import VaultSystem

/// An item's previous versions (docs/FORMAT.md, "History"). Each is the item file the item had at
/// that generation, kept under `.v.<item id>.<generation, 16 hex digits>`: sealed as the item was, so
/// it opens with the same keys and binding (the item id is in the file's associated data, not its
/// name), and a rotation seals it again with the items. A delete leaves a tombstone: a version file
/// holding the layer above's record of the deletion, and the item's generation record left at it, so
/// that an item made again under the name carries on the numbering.
///
/// The previous file is hard-linked to its version name before the new file takes the item's name, so
/// a writer that dies at any point leaves it under one name or both, never none. The version that
/// falls off the bound is renamed over the writer's spare, which then holds a file no name needs and is
/// zeroed and reused as before.
package enum ItemHistory {
    static let prefix = ".v."
    /// The versions kept of each item before its current one (of a deleted item, before its tombstone)
    /// when the vault's marker does not say.
    static let defaultVersionsKept = 10
    /// Above every generation a writer makes (one a second for a billion years is below 2^55).
    package static let maximumGeneration: UInt64 = 1 << 62
    /// The most a vault may keep (what the marker's byte holds).
    package static let maximumVersionsKept = 254

    /// The version file of item `id` at `generation`.
    static func name(_ id: ItemID, generation: UInt64) -> String {
        var name = id.name(prefixedBy: prefix)
        var digits: [UInt8] = [UInt8(ascii: ".")]
        generation.forEachBigEndianByte { Hex.append($0, to: &digits) }
        name += String(decoding: digits, as: UTF8.self)
        return name
    }

    /// The item id and generation a version file's name gives; nil for any other name.
    static func parse(_ name: String) -> (id: ItemID, generation: UInt64)? {
        let digits = 2 * ItemID.hashByteCount
        // Every name of a group's listing comes here (the clean-up's pruning): most leave before a copy.
        guard name.utf8.count == prefix.utf8.count + digits + 17, name.hasPrefix(prefix) else { return nil }
        let bytes = Array(name.utf8)
        guard bytes[prefix.utf8.count + digits] == UInt8(ascii: ".") else { return nil }
        let idDigits = bytes[prefix.utf8.count..<(prefix.utf8.count + digits)]
        guard ItemID.areHexDigits(idDigits), let id = try? ItemID(String(decoding: idDigits, as: UTF8.self)) else {
            return nil
        }
        var generation: UInt64 = 0
        for byte in bytes[(bytes.count - 16)...] {
            guard let value = Hex.value(ofDigit: byte) else { return nil }
            generation = generation << 4 | UInt64(value)
        }
        // No writer numbers that far: a name planted to make arithmetic overflow is no version.
        guard generation < maximumGeneration else { return nil }
        return (id, generation)
    }

    /// The version files among a group's `names` (a whole listing) that lie past the bound: those more
    /// than `kept` below the item's current generation, which `recordedGeneration` reads from its
    /// record (the item's, a deleted item's tombstone's, or the number its deletion took), asked only
    /// of items with versions to spare, or for a deleted item its newest version when that is newer.
    /// Without a record, an item that has a file loses nothing. A write prunes one version (the one its new
    /// version pushes out); this catches what a writer that died before pruning, or a lowered bound,
    /// left. A version at or past the current generation (a tombstone whose delete never happened) is
    /// no reference: the item's next version replaces it.
    static func excess(
        among names: [String], kept: Int, exactly: Bool, recordedGeneration: (ItemID) -> UInt64?
    ) -> (names: [String], unresolved: Bool) {
        let versions = names.compactMap { name in parse(name).map { (name, $0.id, $0.generation) } }
        guard !versions.isEmpty else { return ([], false) }
        var byItem: [ItemID: [(name: String, generation: UInt64)]] = [:]
        for (name, id, generation) in versions { byItem[id, default: []].append((name, generation)) }
        // An item is looked at only when it has more than its bound, and, unless `exactly`, a deleted
        // one (no file) only past its bound and a tombstone's worth: a deleted item has that many, and
        // this runs at each writer's first write. An item that still has its file never has more than
        // its bound but for a leftover (or a tombstone whose delete never happened), which a record
        // read tells apart.
        var listed: Set<String>?
        var excess: [String] = []
        // An item left with more than it may have (its record lags its files: a writer died between
        // them): the group is not tidy until a later sweep, once the item's next write set its record.
        var unresolved = false
        for (id, files) in byItem where files.count > kept {
            if listed == nil { listed = Set(names) }
            let deleted = !listed!.contains(id.fileName)
            if !exactly, files.count == kept + 1, deleted { continue }
            // A deleted item's record may lag its tombstone (a delete killed before the record): the
            // newer of the two.
            let recorded = recordedGeneration(id)
            let current = deleted ? max(recorded ?? 0, files.map(\.generation).max()!) : recorded ?? 0
            let dropped = current > UInt64(kept) ? files.filter { $0.generation < current - UInt64(kept) } : []
            excess += dropped.map(\.name)
            if files.count - dropped.count > kept + (deleted && !exactly ? 1 : 0) { unresolved = true }
        }
        return (excess, unresolved)
    }

    /// What a write does to the history of the item it replaces: keep the file it had (at `previous`)
    /// and drop the version that falls off the bound (`pruned`, when there is one).
    struct Step {
        let version: String
        let pruned: String?

        /// The step of a write that makes generation `generation` of `id`, keeping `kept` versions.
        init?(_ id: ItemID, writing generation: UInt64, kept: Int) {
            guard generation > 1, kept > 0 else { return nil }
            let previous = generation - 1
            version = ItemHistory.name(id, generation: previous)
            pruned = previous > UInt64(kept) ? ItemHistory.name(id, generation: previous - UInt64(kept)) : nil
        }

        /// Gives the item's current file (`itemName`) its version name as well, before it is replaced;
        /// false when there is no current file (a new item: nothing to keep). A version file already
        /// there that is another file (the leftover of a delete that stopped half way) is replaced.
        func keepPrevious(of itemName: String, in directory: FileDescriptor, directoryPath: FilePath)
            throws(StoreError) -> Bool
        {
            do {
                try directory.linkAt(itemName, to: version)
                return true
            } catch .noSuchFileOrDirectory {
                return false
            } catch .fileExists {
                // Below.
            } catch {
                throw StoreError.system(error, .link, "keep the previous version as", path: directoryPath / version)
            }
            guard let current = try? directory.statusAt(itemName) else { return false }
            if let kept = try? directory.statusAt(version), kept.inode == current.inode, kept.device == current.device {
                return true  // linked by a writer that died before its exchange
            }
            let temporary = AtomicFile.temporaryName()
            do {
                try directory.linkAt(itemName, to: temporary)
                try directory.renameAt(temporary, to: version)
                return true
            } catch {
                try? directory.unlinkAt(temporary)
                throw StoreError.system(error, .link, "keep the previous version as", path: directoryPath / version)
            }
        }

        /// After the exchange that made the spare `spareName` hold the previous file (also named
        /// `version` now): the pruned version takes the spare's name, to be zeroed and written over
        /// like any spare; without one the spare's name goes (its file is the version's). Best effort:
        /// a spare left with two links is never written in place (`SpareFile`), and a version left past
        /// the bound goes at the next sweep (`pruneHistory`; the group is not stamped tidy meanwhile,
        /// `WriterMark`). False when the pruned version stays.
        func recycle(into spareName: String, in directory: FileDescriptor) -> Bool {
            if let pruned, (try? directory.renameAt(pruned, to: spareName)) != nil { return true }
            try? directory.unlinkAt(spareName)
            return pruned == nil
        }

        /// After a write through a temp file: the pruned version goes. False when it stays.
        func prune(in directory: FileDescriptor) -> Bool {
            guard let pruned else { return true }
            return (try? directory.unlinkAt(pruned)) != nil
        }

        /// After the exchange of a write through the spare `spareName`: `recycle` when the previous file
        /// was kept as a version (`kept`, so the spare holds it), else `prune`. False when the pruned
        /// version stays.
        func dropPruned(afterKeeping kept: Bool, spareName: String, in directory: FileDescriptor) -> Bool {
            kept ? recycle(into: spareName, in: directory) : prune(in: directory)
        }
    }
}
