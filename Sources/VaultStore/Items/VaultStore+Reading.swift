import VaultCrypto
import VaultSystem

/// The read path. Readers take no lock: they read an item's generation record first and its file
/// second (so a concurrent update never looks like a rollback), decrypt it, let the caller decode it,
/// and check the decoded version against the record. A read that fails a check is repeated by name
/// until the verdict stands (`readPlaintext`), since the file a reader opened may have become the
/// group's spare and been written over.
extension VaultStore {
    /// Item `item` as its current value: read, authenticated, decoded by `decode` (which gets the
    /// plaintext and the file's path for messages, built only when asked for: a tenth of a get) and checked against its generation record: nil
    /// when there is no such item, or when the file is the old half of a move under way (a writer
    /// crashed, or is still running, between writing the new file and removing this one). An item file
    /// replaced with an older copy of itself is an `integrity` error naming it. Failures of the store
    /// come as `Failure(storeError)`, those of `decode` as they are.
    @inlinable
    package func read<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> Record? {
        guard let found = try readVerified(item, decoding: decode) else { return nil }
        guard found.moving else { return found.record }
        return try isMovedAway(item, found.record.version, decoding: decode) ? nil : found.record
    }

    /// Item `item`'s file as it is, verified as `read` verifies it, including the old half of a move
    /// under way: for scans, which see both halves and keep the later one, and for checks of every file.
    @inlinable
    package func readFile<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> Record? {
        try readVerified(item, decoding: decode)?.record
    }

    /// The decrypted plaintext of item `id` of `group`, or nil when there is none, without the version
    /// checks (which need the layer above's decoding): for plaintexts that carry no version. Wiped when
    /// the result goes.
    package func readPlaintext(group: GroupName, id: ItemID) throws(StoreError) -> TransientBytes? {
        let item = ItemLocation(group: group, id: id)
        _ = try refreshReplicaIfStale(group)
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        return try readPlaintext(item, in: directory)
    }

    /// The fingerprint of item `id` of `group`, or nil when there is no such file (one readlink and
    /// one stat, no decryption).
    package func fingerprint(group: GroupName, id: ItemID) throws(StoreError) -> ItemFingerprint? {
        let item = ItemLocation(group: group, id: id)
        _ = try refreshReplicaIfStale(group)
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let text = try GenerationRecord.readText(id, in: directory, itemPath: itemPath(item))
        let status: FileStatus
        do {
            status = try directory.statusAt(id.fileName)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StoreError.system(error, .stat, "inspect", path: itemPath(item))
        }
        return ItemFingerprint(recordText: text, status: status)
    }

    /// One verified read: the generation record, then the file, then `decode`, then the rollback check.
    /// `moving` is true when a writer marked the item as being moved: only then must a reader look for
    /// the move's intent note.
    /// Generic (and inlinable, so that it is specialised for the caller's record) only around the
    /// caller's decoding: the store's own steps are `fetch` and `verify`.
    @inlinable
    func readVerified<Record: VersionedRecord, Failure: StoreErrorConvertible>(
        _ item: ItemLocation, decoding decode: (_ plaintext: [UInt8], _ path: () -> String) throws(Failure) -> Record
    ) throws(Failure) -> (record: Record, moving: Bool)? {
        let fetched: FetchedItem?
        do {
            fetched = try fetch(item)
        } catch {
            throw Failure(error)
        }
        guard let fetched else { return nil }
        let record = try fetched.plaintext.withBytes { (bytes) throws(Failure) in
            try decode(bytes, { self.path(of: fetched.item) })
        }
        do {
            try verify(fetched, version: record.version)
        } catch {
            throw Failure(error)
        }
        return (record, fetched.moving)
    }

    /// An item as read, before the caller decodes it: its generation record, then its plaintext.
    @usableFromInline
    struct FetchedItem {
        @usableFromInline let item: ItemLocation
        @usableFromInline let plaintext: TransientBytes
        let recorded: GenerationRecord.Recorded?
        @usableFromInline let moving: Bool
    }

    /// The generation record of `item` (read first), then its file, decrypted; nil when it does not exist.
    @usableFromInline
    func fetch(_ item: ItemLocation) throws(StoreError) -> FetchedItem? {
        _ = try refreshReplicaIfStale(item.group)
        guard let directory = try groupDirectory(item.group, create: false) else { return nil }
        let found = try GenerationRecord.read(item.id, in: directory, itemPath: itemPath(item))
        guard let plaintext = try readPlaintext(item, in: directory) else { return nil }
        return FetchedItem(item: item, plaintext: plaintext, recorded: found.recorded, moving: found.moving)
    }

    /// The rollback check of a fetched item whose decoded version is `version` (made only when the item
    /// has a generation record, which one never updated has not: a version copies the persistent id).
    @usableFromInline
    func verify(_ fetched: FetchedItem, version: @autoclosure () -> ItemVersion) throws(StoreError) {
        guard let recorded = fetched.recorded else { return }
        try checkNotRolledBack(recorded, fetched.item, version: version())
    }

    /// Throws an `integrity` error naming the file when `recorded` (read before the item) is an
    /// authentic record of this item at a newer generation than `version`: the item file was replaced
    /// with an older copy of itself.
    func checkNotRolledBack(_ recorded: GenerationRecord.Recorded, _ item: ItemLocation, version: ItemVersion)
        throws(StoreError)
    {
        // Most reads end here, before the group's keys are looked up.
        guard recorded.generation > version.generation else { return }
        let keys = try keys(for: item.group)
        guard
            try GenerationRecord.provesRollback(
                recorded, of: version, key: keys.index, binding: keys.binding, location: item)
        else { return }
        let path = itemPath(item)
        throw StoreError(
            .integrity,
            "\(path) is generation \(version.generation) but the vault recorded generation \(recorded.generation): "
                + "it was replaced with an older copy of itself (rollback)",
            path: path.string)
    }

    /// Reads of one item before a failure is reported while its bytes keep changing under the reader.
    static let readAttempts = 8

    /// Reads and decrypts item `item` of the open `directory`; nil when it does not exist. A file that
    /// fails any check is an `integrity` error naming it, never garbage. Its path is built only for
    /// a message (it was a tenth of a get).
    /// `fileName`: another file of the item's (a version of it, `ItemHistory`), read the same way.
    func readPlaintext(_ item: ItemLocation, in directory: FileDescriptor, fileName: String? = nil)
        throws(StoreError) -> TransientBytes?
    {
        let fileName = fileName ?? item.id.fileName
        func filePath() -> FilePath { fileName == item.id.fileName ? itemPath(item) : groupPath(item.group) / fileName }
        var failed: (contents: [UInt8], error: StoreError)?
        for attempt in 1...Self.readAttempts {
            let contents: [UInt8]
            var unchanged = false
            do {
                if attempt == 1 {
                    contents = try SmallFile.read(
                        fileName, in: directory, path: filePath(), limit: ItemFile.maximumFileByteCount)
                } else {
                    (contents, unchanged) = try SmallFile.readConfirmed(
                        fileName, in: directory, path: filePath(), limit: ItemFile.maximumFileByteCount)
                }
            } catch  where error.errno == .noSuchFileOrDirectory {
                return nil
            }
            do throws(StoreError) {
                return try openItemFile(contents, as: item, path: filePath())
            } catch {
                // A reader takes no lock, so the file it opened may have become the group's spare and be
                // written over (`SpareFile`): what it read can be another item's file, zeros, or torn.
                // Such a read is not the file at the name; reading again by name is. A verdict stands
                // when a read found the file at the name unchanged throughout and returned the same
                // bytes as the failed read before it (a damaged file stays damaged).
                let settled = unchanged && contents == failed?.contents
                guard [StoreError.Code.integrity, .locked, .unsupportedFormat].contains(error.code), !settled
                else { throw error }
                failed = (contents, error)
            }
        }
        // Every read failed and the bytes kept changing: report the last failure.
        throw failed!.error
    }

    /// The plaintext of `contents`, a sealed file of `item` (its current one or a version), read from
    /// `path` (made only for a message): opened under the key its header names and bound to the item.
    func openItemFile(_ contents: [UInt8], as item: ItemLocation, path: @autoclosure () -> FilePath)
        throws(StoreError) -> TransientBytes
    {
        let header = try ItemFile.header(of: contents, path: path())
        let (key, keys) = try encryptionKey(header.protectionClass, for: item, generation: header.generation)
        return try ItemFile.open(contents, key: key, binding: keys.binding, location: item, path: path())
    }
}

extension StoreErrorConvertible {
    /// Runs `body`, handing a store failure on as this error type.
    @inline(__always)
    static func converting<R>(_ body: () throws(StoreError) -> R) throws(Self) -> R {
        do {
            return try body()
        } catch {
            throw Self(error)
        }
    }
}
