import VaultCrypto
import VaultSystem

/// Reading an item's history (`ItemHistory`): which versions it has, one version's record, and where
/// the numbering of a deleted item stands.
extension VaultStore {
    /// The generations of `item`'s kept versions (its tombstone included), oldest first; empty when it
    /// has none. Lists the group's directory (a fleet group's replica).
    package func versionGenerations(of item: ItemLocation) throws(StoreError) -> [UInt64] {
        _ = try refreshReplicaIfStale(item.group)
        if let replica = try replica(for: item.group) { return try replica.versionGenerations(of: item.id) }
        guard let directory = try groupDirectory(item.group, create: false) else { return [] }
        let names: [String]
        do {
            names = try directory.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(item.group))
        }
        return names.compactMap { name in
            guard let version = ItemHistory.parse(name), version.id == item.id else { return nil }
            return version.generation
        }.sorted()
    }

    /// Every kept version file of `group` (local groups: a fleet group's versions are in its replica,
    /// which guards them), by item and generation, in name order. Lists the group's directory once.
    package func versionFiles(in group: GroupName) throws(StoreError) -> [(id: ItemID, generation: UInt64)] {
        guard !isFleetGroup(group), let directory = try groupDirectory(group, create: false) else { return [] }
        let names: [String]
        do {
            names = try directory.entryNames()
        } catch {
            throw StoreError.system(error, .readDirectory, "list", path: groupPath(group))
        }
        return names.sorted().compactMap { ItemHistory.parse($0) }
    }

    /// The path of `item`'s version file at `generation` (for messages).
    package func versionPath(_ item: ItemLocation, generation: UInt64) -> String {
        (groupPath(item.group) / ItemHistory.name(item.id, generation: generation)).string
    }

    /// Version `generation` of `item`, read, authenticated and decoded as `read` does; nil when the
    /// item has no such version. A version file whose record is of another generation (renamed by
    /// hand) is an `integrity` error naming it.
    package func readVersion<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, generation: UInt64,
        decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> Record? {
        let name = ItemHistory.name(item.id, generation: generation)
        var path = groupPath(item.group) / name
        let plaintext: TransientBytes
        do throws(StoreError) {
            _ = try refreshReplicaIfStale(item.group)
            if let replica = try replica(for: item.group) {
                guard let version = try replica.version(of: item.id, generation: generation) else { return nil }
                path = FilePath(version.place)
                plaintext = try openItemFile(version.contents, as: item, path: path)
            } else {
                guard let directory = try groupDirectory(item.group, create: false),
                    let read = try readPlaintext(item, in: directory, fileName: name)
                else { return nil }
                plaintext = read
            }
        } catch {
            throw Failure(error)
        }
        let record = try plaintext.withBytes { (bytes) throws(Failure) in try decode(bytes, { path.string }) }
        guard record.version.generation == generation else {
            throw Failure(
                StoreError(
                    .integrity,
                    "\(path) holds generation \(record.version.generation), not \(generation): it was renamed or "
                        + "copied; remove it",
                    path: path.string))
        }
        return record
    }

    /// The generation `item` had when it was deleted, when it has no file now: its tombstone's (which
    /// its generation record keeps), or the number its record says its deletion took, or past either
    /// while version files follow (a delete that stopped before its record was written); nil when it
    /// has no history. An item made again under the name carries on from there, so that its versions
    /// never share a number with the deleted item's.
    package func deletedGeneration(of item: ItemLocation) throws(StoreError) -> UInt64? {
        guard let directory = try groupDirectory(item.group, create: false) else { return nil }
        do {
            _ = try directory.statusAt(item.id.fileName)
            return nil
        } catch {
            guard error == .noSuchFileOrDirectory else {
                throw StoreError.system(error, .stat, "inspect", path: itemPath(item))
            }
        }
        // A fleet group's replica removes an item and writes its tombstone in one write.
        if let replica = try replica(for: item.group) { return try replica.versionGenerations(of: item.id).last }
        var generation: UInt64 = 0
        if let text = try GenerationRecord.readText(item.id, in: directory, itemPath: itemPath(item)) {
            if let recorded = GenerationRecord.generation(ofText: text), recorded < ItemHistory.maximumGeneration {
                generation = recorded
            } else {
                // `moving` (a move whose source went, killed before its record) or damage: the versions say.
                generation = try versionGenerations(of: item).last ?? 0
            }
        }
        // Bounded: a delete leaves at most its tombstone past the record, the item's file before it.
        for _ in 0..<2 where (try? directory.statusAt(ItemHistory.name(item.id, generation: generation + 1))) != nil {
            generation += 1
        }
        return generation == 0 ? nil : generation
    }
}
