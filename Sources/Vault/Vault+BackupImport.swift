import FoundationEssentials
import VaultArchive
import VaultCrypto
import VaultStore
import VaultSystem

/// What a backup holds, read as the import needs it: its groups, and its items in order, as often as
/// asked (a streamed backup opens its messages again each time, one at a time).
/// A streamed backup copied into a file of the vault's and checked without its key (`Vault.spoolBackup`),
/// ready to import.
package struct SpooledBackup {
    let reader: BackupStream.Reader
    /// What the backup is sealed under.
    package var sealing: BackupFile.Sealing { reader.sealing }
}

/// What a backup holds, read as the import needs it: the groups it records, the groups its items are
/// in (every item read, and authenticated, to learn them), and its items in order once more (a streamed
/// backup opens its messages again, one at a time).
private struct BackupContents {
    /// The groups the backup records (nil in a version-1 bundle).
    let groups: [BackupBundle.Group]?
    /// The groups of its items.
    let itemGroups: Set<String>
    /// Hands every item to the body, in order.
    let forEachItem: ((BackupBundle.Item) throws(VaultError) -> Void) throws(VaultError) -> Void
}

extension Vault {
    /// Checks the backup at `path` without its passphrase or key and without reading it whole (a
    /// regular file of a plausible size, the backup's magic, a version this build reads, an Argon2id
    /// cost within `costCeiling`): what to run before asking for the passphrase. Says what the backup
    /// is sealed under.
    @discardableResult
    public static func inspectBackup(at path: String, costCeiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(VaultError) -> BackupFile.Sealing
    {
        try translatingStoreErrors { () throws(StoreError) in try BackupFile.inspect(at: path, ceiling: costCeiling) }
    }

    /// The same checks of the first `BackupFile.headerByteCount` bytes of a backup that comes on a
    /// stream (named `name` in messages): what to run before reading the rest.
    @discardableResult
    public static func inspectBackup(
        header: [UInt8], name: String, costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> BackupFile.Sealing {
        try translatingStoreErrors { () throws(StoreError) in
            try BackupFile.inspect(header: header, name: name, ceiling: costCeiling)
        }
    }

    /// Every check of the whole backup `sealed` that needs no passphrase or key (size, checksum,
    /// header): damage is reported as such before a passphrase is asked for.
    @discardableResult
    public static func checkBackup(
        _ sealed: [UInt8], name: String, costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> BackupFile.Sealing {
        try translatingStoreErrors { () throws(StoreError) in
            guard BackupStream.isStreamed(sealed) else {
                return try BackupFile.check(sealed, name: name, ceiling: costCeiling)
            }
            return try BackupStream.Reader(bytes: sealed, name: name, ceiling: costCeiling).sealing
        }
    }

    /// Adds the items of the backup at `path` to this vault with their attributes, dates and persistent
    /// references. An item whose primary key exists is reported as a duplicate and left alone, unless
    /// `replace` is set.
    /// A backup that asks for more Argon2id work than `costCeiling` is refused before any work.
    public func importBackup(
        from path: String, passphrase: SecureBytes, replace: Bool = false,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> ImportReport {
        try importBackup(from: path, key: .passphrase(passphrase), replace: replace, costCeiling: costCeiling)
    }

    /// Adds the items of the backup at `path`, opened with `key` (its passphrase or its backup key
    /// file), as `importBackup(from:passphrase:replace:costCeiling:)` does.
    public func importBackup(
        from path: String, key: BackupKey, replace: Bool = false,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> ImportReport {
        try importBackup(
            from: path, key: key, replace: replace, costCeiling: costCeiling, groupFile: Vault.systemGroupFile)
    }

    /// `importBackup(from:key:replace:costCeiling:)` with the Unix groups of shared groups resolved in
    /// `groupFile` (tests give their own).
    func importBackup(
        from path: String, key: BackupKey, replace: Bool, costCeiling: PassphraseKeyDerivation.Limits,
        groupFile: String?
    ) throws(VaultError) -> ImportReport {
        try Self.inspectBackup(at: path, costCeiling: costCeiling)
        let file: FileDescriptor
        do {
            file = try FileDescriptor.currentWorkingDirectory.openAt(path, .readOnly)
        } catch {
            throw VaultError(.io, "cannot open \(path): \(error)")
        }
        defer { try? file.close() }
        let header = try Self.readHeader(of: file, name: path)
        guard BackupStream.isStreamed(header) else {
            let plaintext = try translatingStoreErrors { () throws(StoreError) in
                try BackupFile.read(from: path, key: key, ceiling: costCeiling)
            }
            return try importContents(
                try Self.contents(plaintext, name: path), name: path, replace: replace, groupFile: groupFile)
        }
        // Copied first, as a stream is: the import reads it more than once, and a file that changed in
        // between (another user's directory, a network file system) must not import in part.
        let spooled = try spoolBackup(from: file, header: header, name: path, costCeiling: costCeiling)
        return try importBackup(spooled.reader, key: key, replace: replace, groupFile: groupFile)
    }

    /// Adds the items of the backup bytes `sealed` (read from a stream; `name` names it in messages),
    /// opened with `key`, as `importBackup(from:key:replace:costCeiling:)` does.
    public func importBackup(
        sealed: [UInt8], name: String, key: BackupKey, replace: Bool = false,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> ImportReport {
        guard BackupStream.isStreamed(sealed) else {
            let plaintext = try translatingStoreErrors { () throws(StoreError) in
                try BackupFile.open(sealed, name: name, key: key, ceiling: costCeiling)
            }
            return try importContents(
                try Self.contents(plaintext, name: name), name: name, replace: replace, groupFile: Vault.systemGroupFile
            )
        }
        let reader = try translatingStoreErrors { () throws(StoreError) in
            try BackupStream.Reader(bytes: sealed, name: name, ceiling: costCeiling)
        }
        return try importBackup(reader, key: key, replace: replace, groupFile: Vault.systemGroupFile)
    }

    /// Whether the first bytes of a backup, `header`, are those of a streamed backup (which `spoolBackup`
    /// reads a part at a time) rather than one opened whole.
    package static func isStreamedBackup(header: [UInt8]) -> Bool { BackupStream.isStreamed(header) }

    /// The streamed backup that comes on `input` (named `name` in messages), whose first `header` bytes
    /// were read already: copied into a file without a name in the vault's directory, a part at a time,
    /// and checked there without its key, so that memory does not grow with the backup.
    package func spoolBackup(
        from input: FileDescriptor, header: [UInt8], name: String,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> SpooledBackup {
        SpooledBackup(
            reader: try backupReader(streamedFrom: input, header: header, name: name, costCeiling: costCeiling))
    }

    /// Adds the items of `spooled`, opened with `key`, as `importBackup(from:key:replace:costCeiling:)` does.
    package func importBackup(_ spooled: SpooledBackup, key: BackupKey, replace: Bool) throws(VaultError)
        -> ImportReport
    {
        try importBackup(spooled.reader, key: key, replace: replace, groupFile: Vault.systemGroupFile)
    }

    private func backupReader(
        streamedFrom input: FileDescriptor, header: [UInt8], name: String, costCeiling: PassphraseKeyDerivation.Limits
    ) throws(VaultError) -> BackupStream.Reader {
        try translatingStoreErrors { () throws(StoreError) in
            let spool = try engine.store.unnamedFile()
            do {
                try spool.writeAll(header)
                var total = header.count
                while true {
                    let part = try input.read(upTo: 1 << 20)
                    if part.isEmpty { break }
                    total += part.count
                    guard total <= BackupFile.maximumByteCount else {
                        throw StoreError(
                            .integrity,
                            "\(name) holds more than \(BackupFile.maximumByteCount) bytes: not a vault backup")
                    }
                    try spool.writeAll(part)
                }
            } catch let error as StoreError {
                try? spool.close()
                throw error
            } catch {
                try? spool.close()
                throw StoreError(.io, "cannot read \(name) into a file of the vault's: \(error)")
            }
            return try BackupStream.Reader(file: spool, name: name, ceiling: costCeiling)
        }
    }

    /// Adds the items of the streamed backup `reader` checked, opened with `key`.
    func importBackup(_ reader: BackupStream.Reader, key: BackupKey, replace: Bool, groupFile: String?)
        throws(VaultError) -> ImportReport
    {
        let streamKey = try translatingStoreErrors { () throws(StoreError) in try reader.streamKey(key) }
        // Every message authenticated and decoded before anything is made or written.
        var fields: BackupFields?
        var itemGroups: Set<String> = []
        try translatingStoreErrors { () throws(StoreError) in
            try reader.forEachMessage(key: streamKey) { (index, message) throws(StoreError) in
                guard index > 0 else {
                    fields = try Self.decode(BackupFields.self, message, name: reader.name)
                    return
                }
                let item = try Self.decode(BackupBundle.Item.self, message, name: reader.name)
                guard (try? AccessGroup(item.group)) != nil else {
                    throw StoreError(
                        .integrity, "\(reader.name) holds an item of group \"\(item.group)\", no group name")
                }
                itemGroups.insert(item.group)
            }
        }
        guard let fields, fields.version == BackupFields.currentVersion else {
            throw VaultError(
                .decode,
                "\(reader.name) is a backup of version \(fields?.version ?? 0); this build reads streamed version "
                    + "\(BackupFields.currentVersion)")
        }
        let contents = BackupContents(groups: fields.groups, itemGroups: itemGroups) { (body) throws(VaultError) in
            // The body's own failure, carried out of the reader's loop as it is.
            var failure: VaultError?
            do throws(StoreError) {
                try reader.forEachMessage(key: streamKey) { (index, message) throws(StoreError) in
                    guard index > 0 else { return }
                    let item = try Self.decode(BackupBundle.Item.self, message, name: reader.name)
                    do throws(VaultError) {
                        try body(item)
                    } catch {
                        failure = error
                        throw StoreError(.io, error.message)
                    }
                }
            } catch {
                throw failure ?? VaultError(error)
            }
        }
        return try importContents(contents, name: reader.name, replace: replace, groupFile: groupFile)
    }

    /// The contents of a version-1 backup's opened bundle.
    private static func contents(_ plaintext: SecureBytes, name path: String) throws(VaultError) -> BackupContents {
        let bundle: BackupBundle
        do {
            bundle = try plaintext.withTransientCopy { bytes in
                try VaultArchive.decode(
                    BackupBundle.self, from: bytes, options: VaultArchive.Options(maxSize: BackupFile.maximumByteCount))
            }
        } catch {
            throw VaultError(.decode, "\(path) opened but does not hold a vault backup: \(error)", cause: error)
        }
        guard BackupBundle.readableVersions.contains(bundle.version) else {
            throw VaultError(
                .decode,
                "\(path) is a backup of version \(bundle.version); this build reads versions "
                    + "\(BackupBundle.readableVersions.lowerBound) to \(BackupBundle.readableVersions.upperBound)")
        }
        for item in bundle.items { _ = try AccessGroup(item.group) }
        return BackupContents(groups: bundle.groups, itemGroups: Set(bundle.items.map(\.group))) {
            (body) throws(VaultError) in
            for item in bundle.items { try body(item) }
        }
    }

    /// `message` decoded as `T`, or damage naming the backup.
    private static func decode<T: Decodable>(_ type: T.Type, _ message: SecureBytes, name: String) throws(StoreError)
        -> T
    {
        do {
            return try message.withTransientCopy { bytes in
                try VaultArchive.decode(
                    T.self, from: bytes, options: VaultArchive.Options(maxSize: BackupStream.maximumFrameByteCount))
            }
        } catch {
            throw StoreError(.integrity, "\(name) opened but does not hold a vault backup: \(error)", path: name)
        }
    }

    /// Imports `contents`, whose items were all read (and, streamed, authenticated) once already, so
    /// that a backup altered in its middle adds nothing: the groups it records are made, then its
    /// items added.
    private func importContents(_ contents: BackupContents, name path: String, replace: Bool, groupFile: String?)
        throws(VaultError) -> ImportReport
    {
        // The groups first, as the backup records them: a shared group is made shared, or refused.
        let preparation = try prepareGroups(contents.groups, name: path, groupFile: groupFile)
        let groups = contents.itemGroups.compactMap { try? AccessGroup($0) }
        var report = try withWriteLock(groups: [], creating: groups) { tx throws(VaultError) in
            var imported = 0
            var replaced = 0
            var duplicates: [String] = []
            var persistentIDs: [AccessGroup: Set<Data>] = [:]
            try contents.forEachItem { (item) throws(VaultError) in
                let group = try AccessGroup(item.group)
                var record = item.record
                let id = try engine.itemID(group, record.primaryKey, writing: true)
                if let existing = try engine.load(group, id) {
                    guard replace else {
                        duplicates.append(engine.describe(record.itemClass, record.attributes, group: group))
                        return
                    }
                    // The replacement is the item's next version: its history moves forward, never back.
                    record.generation = existing.generation &+ 1
                    record.persistentID = existing.persistentID
                    try engine.save(record, group: group, id: id, in: tx)
                    replaced += 1
                    return
                }
                // A persistent id that another item of the group already has (a backup imported twice,
                // after a rename) would make two items one: such an item gets a fresh id.
                if persistentIDs[group] == nil {
                    persistentIDs[group] = Set(try engine.scan(group) { _ in true }.items.map(\.record.persistentID))
                }
                if persistentIDs[group]!.contains(record.persistentID) {
                    do {
                        record.persistentID = Data(try SecureRandom.bytes(count: 16))
                    } catch {
                        throw VaultError(.notAvailable, "cannot make a persistent id: \(error)")
                    }
                }
                persistentIDs[group]!.insert(record.persistentID)
                // On the name of a deleted item, after that item's versions.
                record.generation = max(record.generation, try engine.firstGeneration(group, id))
                try engine.save(record, group: group, id: id, in: tx)
                imported += 1
            }
            return ImportReport(imported: imported, replaced: replaced, duplicates: duplicates)
        }
        report.madeGroups = preparation.made
        report.differingGroups = preparation.differing
        return report
    }

    /// The first `BackupFile.headerByteCount` bytes of `file`, read from its start (fewer when it is
    /// shorter): the file's offset is after them.
    private static func readHeader(of file: FileDescriptor, name: String) throws(VaultError) -> [UInt8] {
        do {
            return try file.read(upTo: BackupFile.headerByteCount)
        } catch {
            throw VaultError(.io, "cannot read \(name): \(error)")
        }
    }
}
