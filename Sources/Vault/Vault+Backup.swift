import FoundationEssentials
import VaultArchive
import VaultCrypto
import VaultStore
import VaultSystem

/// What `export` wrote.
public struct ExportReport: Sendable, Hashable {
    /// Items in the backup.
    public let exported: Int
    /// `…ThisDeviceOnly` items left out: they never leave the device.
    public let leftOut: Int
    /// How many of `leftOut` are device identifiers (`deviceIdentifier`, `vault uuid`).
    public let leftOutDeviceIdentifiers: Int
    /// The groups left out whole because a file of theirs could not be read (with
    /// `leavingOutDamagedGroups`), each with the first failure: the backup does not hold them.
    public let leftOutGroups: [LeftOutGroup]

    /// A group that a backup does not hold, and why.
    public struct LeftOutGroup: Sendable, Hashable {
        /// The group's name.
        public let group: String
        /// The failure that left it out.
        public let reason: String
        /// Its status (the exit status of the CLI's export).
        public let status: VaultStatus
    }

    init(exported: Int, leftOut: Int, leftOutDeviceIdentifiers: Int = 0, leftOutGroups: [LeftOutGroup] = []) {
        self.exported = exported
        self.leftOut = leftOut
        self.leftOutDeviceIdentifiers = leftOutDeviceIdentifiers
        self.leftOutGroups = leftOutGroups
    }
}

/// A backup sealed in memory (`sealedBackup`): the bytes of a backup file and what they hold.
public struct SealedBackup: Sendable {
    /// The sealed backup, as a backup file holds it.
    public let bytes: [UInt8]
    /// What was exported.
    public let report: ExportReport
}

/// What `importBackup` did.
public struct ImportReport: Sendable, Hashable {
    /// Items added.
    public let imported: Int
    /// Existing items overwritten (only with `replace`).
    public let replaced: Int
    /// Items skipped because an item with the same primary key exists (without `replace`), described
    /// by group, service or server, and account.
    public let duplicates: [String]
    /// The groups the import made as the backup records them ("group db, shared with Unix group
    /// vault-db (gid 1234)", "group web, private"), before any item.
    public var madeGroups: [String] = []
    /// The groups that exist in this vault with another sharing than the backup records: their items
    /// went into them as they are, described.
    public var differingGroups: [String] = []
}

/// The archive inside a backup: every item's record with its group, and (from version 2) every group
/// with how its key was kept (`Vault+BackupGroups.swift`).
struct BackupBundle: Codable {
    struct Item: Codable {
        var group: String
        var record: ItemRecord
    }
    /// 1: items only; 2: with `groups`. This build writes 2 and reads both.
    var version: Int
    var created: Date
    var sourceVaultID: Data
    var items: [Item]
    /// Version 2: every group of the vault, shared or private; nil in a version-1 backup.
    var groups: [Group]?

    /// The versions this build reads.
    static let readableVersions = 1...2
}

/// Backups: every item of every group of the vault, sealed under a passphrase (Argon2id +
/// XChaCha20-Poly1305) or a backup key file (`docs/FORMAT.md`). They are vault-wide operations for the owner of the vault's
/// files, not scoped to the client's access groups.
extension Vault {
    static let deviceOnly: Set<Accessibility> = [
        .whenPasscodeSetThisDeviceOnly, .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly,
        .alwaysThisDeviceOnly,
    ]

    /// Writes a backup of every item to `path` (which must not exist), sealed under `passphrase`,
    /// leaving out the `…ThisDeviceOnly` items. A damaged item file stops the export (run `vault check`).
    public func export(to path: String, passphrase: SecureBytes, limits: PassphraseKeyDerivation.Limits = .moderate)
        throws(VaultError) -> ExportReport
    {
        try export(to: path, key: .passphrase(passphrase, limits: limits))
    }

    /// Writes a backup of every item to `path` (which must not exist; 0600, durably), sealed under
    /// `key` (a passphrase or a backup key file), leaving out the `…ThisDeviceOnly` items. A damaged
    /// item file stops the export (run `vault check`); with `leavingOutDamagedGroups`, its group is
    /// left out instead, and the others are exported (`ExportReport.leftOutGroups` names them).
    public func export(to path: String, key: BackupKey, leavingOutDamagedGroups: Bool = false) throws(VaultError)
        -> ExportReport
    {
        var (bytes, report) = try archiveEveryItem(leavingOutDamagedGroups: leavingOutDamagedGroups)
        defer { bytes.wipe() }
        try translatingStoreErrors { () throws(StoreError) in try BackupFile.write(bytes, to: path, key: key) }
        return report
    }

    /// A backup of every item, sealed under `key`, in memory: the bytes of a backup file, for a
    /// stream (`vault export -` writes them to standard output, e.g. into `rclone rcat`).
    public func sealedBackup(key: BackupKey, leavingOutDamagedGroups: Bool = false) throws(VaultError)
        -> SealedBackup
    {
        var (bytes, report) = try archiveEveryItem(leavingOutDamagedGroups: leavingOutDamagedGroups)
        defer { bytes.wipe() }
        let sealed = try translatingStoreErrors { () throws(StoreError) in try BackupFile.seal(bytes, key: key) }
        return SealedBackup(bytes: sealed, report: report)
    }

    /// The archive of every item but the `…ThisDeviceOnly` ones (plaintext: the caller wipes it).
    private func archiveEveryItem(leavingOutDamagedGroups: Bool) throws(VaultError) -> ([UInt8], ExportReport) {
        var items: [BackupBundle.Item] = []
        var leftOut = 0
        var leftOutDeviceIdentifiers = 0
        var leftOutGroups: [ExportReport.LeftOutGroup] = []
        for name in try translatingStoreErrors({ () throws(StoreError) in try engine.store.groups() }) {
            let group = try AccessGroup(name.rawValue)
            let scanned = try engine.scan(group) { _ in true }
            if let locked = scanned.locked {
                throw VaultError(locked.status, "cannot export a locked vault: \(locked.message)", cause: locked)
            }
            if let damage = scanned.damage, leavingOutDamagedGroups {
                leftOutGroups.append(
                    ExportReport.LeftOutGroup(group: group.rawValue, reason: damage.message, status: damage.status))
                continue
            }
            if let damage = scanned.damage {
                // A group whose key is missing holds sound items: nothing is to be removed, the key restored.
                let keyMissing = (damage.cause as? StoreError)?.code == .missingKey
                throw VaultError(
                    damage.status,
                    "cannot export: \(damage.message)"
                        + (keyMissing
                            ? "" : " (run `vault check`; `vault check --remove-damaged` removes damaged files)"),
                    cause: damage)
            }
            for item in scanned.items {
                if let accessible = item.record.attributes.accessible, Self.deviceOnly.contains(accessible) {
                    leftOut += 1
                    if item.record.attributes.service == Self.deviceIdentifierService { leftOutDeviceIdentifiers += 1 }
                    continue
                }
                items.append(BackupBundle.Item(group: group.rawValue, record: item.record))
            }
        }
        let bundle = BackupBundle(
            version: 2, created: ItemRecord.now(), sourceVaultID: Data(engine.store.vaultID), items: items,
            groups: try backupGroups(groupFile: Vault.systemGroupFile).filter { group in
                !leftOutGroups.contains { $0.group == group.name }
            })
        do {
            let bytes = try VaultArchive.encode(
                bundle, options: VaultArchive.Options(maxSize: BackupFile.maximumByteCount))
            return (
                bytes,
                ExportReport(
                    exported: items.count, leftOut: leftOut, leftOutDeviceIdentifiers: leftOutDeviceIdentifiers,
                    leftOutGroups: leftOutGroups)
            )
        } catch let error as EncodingError {
            throw VaultError(.param, "cannot archive the backup: \(error.redactedDescription)")
        } catch {
            throw VaultError(.param, "cannot archive the backup: \(error)")
        }
    }

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
            try BackupFile.check(sealed, name: name, ceiling: costCeiling)
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
        let plaintext = try translatingStoreErrors { () throws(StoreError) in
            try BackupFile.read(from: path, key: key, ceiling: costCeiling)
        }
        return try importBundle(plaintext, name: path, replace: replace, groupFile: groupFile)
    }

    /// Adds the items of the backup bytes `sealed` (read from a stream; `name` names it in messages),
    /// opened with `key`, as `importBackup(from:key:replace:costCeiling:)` does.
    public func importBackup(
        sealed: [UInt8], name: String, key: BackupKey, replace: Bool = false,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> ImportReport {
        let plaintext = try translatingStoreErrors { () throws(StoreError) in
            try BackupFile.open(sealed, name: name, key: key, ceiling: costCeiling)
        }
        return try importBundle(plaintext, name: name, replace: replace, groupFile: Vault.systemGroupFile)
    }

    private func importBundle(_ plaintext: SecureBytes, name path: String, replace: Bool, groupFile: String?)
        throws(VaultError) -> ImportReport
    {
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
        // The groups first, as the backup records them: a shared group is made shared, or refused.
        let preparation = try prepareGroups(of: bundle, name: path, groupFile: groupFile)
        let groups = Set(bundle.items.compactMap { try? AccessGroup($0.group) })
        var report = try withWriteLock(groups: [], creating: Array(groups)) { tx throws(VaultError) in
            var imported = 0
            var replaced = 0
            var duplicates: [String] = []
            var persistentIDs: [AccessGroup: Set<Data>] = [:]
            for item in bundle.items {
                let group = try AccessGroup(item.group)
                var record = item.record
                let id = try engine.itemID(group, record.primaryKey, writing: true)
                if let existing = try engine.load(group, id) {
                    guard replace else {
                        duplicates.append(engine.describe(record.itemClass, record.attributes, group: group))
                        continue
                    }
                    // The replacement is the item's next version: its history moves forward, never back.
                    record.generation = existing.generation &+ 1
                    record.persistentID = existing.persistentID
                    try engine.save(record, group: group, id: id, in: tx)
                    replaced += 1
                    continue
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
}
