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
    /// The item files left out because they could not be read (damaged, or another user's), whose
    /// groups were exported otherwise (with `leavingOutDamagedGroups`): the backup does not hold them.
    public var leftOutFiles: [LeftOutFile] = []

    /// An item file that a backup does not hold, and why.
    public struct LeftOutFile: Sendable, Hashable {
        /// The file's path.
        public let path: String
        /// Why it could not be read.
        public let reason: String
        /// Its status.
        public let status: VaultStatus
    }

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

/// The first message of a streamed backup (`BackupStream`): the backup's own fields. Each message after
/// it is one `BackupBundle.Item`.
struct BackupFields: Codable {
    /// 3: the first streamed version.
    var version: Int
    var created: Date
    var sourceVaultID: Data
    /// Every group of the vault, shared or private, as `BackupBundle.groups`.
    var groups: [BackupBundle.Group]

    /// The version this build writes and reads.
    static let currentVersion = 3
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
    /// item file stops the export (run `vault check`); with `leavingOutDamagedGroups`, it is left out
    /// instead (`ExportReport.leftOutFiles`), or its whole group when what failed is the group's (its
    /// key: `ExportReport.leftOutGroups`), and the rest is exported.
    public func export(to path: String, key: BackupKey, leavingOutDamagedGroups: Bool = false) throws(VaultError)
        -> ExportReport
    {
        let (sealed, report) = try sealEveryItem(key: key, leavingOutDamagedGroups: leavingOutDamagedGroups)
        try translatingStoreErrors { () throws(StoreError) in try BackupFile.write(sealed: sealed, to: path) }
        return report
    }

    /// A backup of every item, sealed under `key`, in memory: the bytes of a backup file, for a
    /// stream (`vault export -` writes them to standard output, e.g. into `rclone rcat`).
    public func sealedBackup(key: BackupKey, leavingOutDamagedGroups: Bool = false) throws(VaultError)
        -> SealedBackup
    {
        let (sealed, report) = try sealEveryItem(key: key, leavingOutDamagedGroups: leavingOutDamagedGroups)
        return SealedBackup(bytes: sealed, report: report)
    }

    /// Every item but the `…ThisDeviceOnly` ones, sealed under `key` as a streamed backup: the fields
    /// first, then one message an item, each archive wiped once it is sealed.
    private func sealEveryItem(key: BackupKey, leavingOutDamagedGroups: Bool) throws(VaultError)
        -> ([UInt8], ExportReport)
    {
        var items: [BackupBundle.Item] = []
        var leftOut = 0
        var leftOutDeviceIdentifiers = 0
        var leftOutGroups: [ExportReport.LeftOutGroup] = []
        var leftOutFiles: [ExportReport.LeftOutFile] = []
        for name in try translatingStoreErrors({ () throws(StoreError) in try engine.store.groups() }) {
            let group = try AccessGroup(name.rawValue)
            let scanned: ItemEngine.ScanResult
            do {
                scanned = try engine.scan(group) { _ in true }
            } catch  where leavingOutDamagedGroups && error.status != .interactionNotAllowed {
                // A group that cannot be listed or refreshed at all (a fleet group's planted `fleet.conf`,
                // say) is left out whole, named, and the others are backed up.
                leftOutGroups.append(
                    ExportReport.LeftOutGroup(group: group.rawValue, reason: error.message, status: error.status))
                continue
            }
            if let locked = scanned.locked {
                throw VaultError(locked.status, "cannot export a locked vault: \(locked.message)", cause: locked)
            }
            if let damage = scanned.damage, leavingOutDamagedGroups {
                // Damage of the files themselves (a member can plant one) leaves those files out; anything
                // else (the group's key) leaves the group out whole.
                let ownDamage = scanned.damaged.allSatisfy { file in
                    (file.error.cause as? StoreError)?.path.map { $0 == file.path } ?? true
                }
                guard ownDamage else {
                    leftOutGroups.append(
                        ExportReport.LeftOutGroup(group: group.rawValue, reason: damage.message, status: damage.status))
                    continue
                }
                leftOutFiles += scanned.damaged.map { file in
                    ExportReport.LeftOutFile(
                        path: file.path, reason: Self.reason(file.error.message, path: file.path),
                        status: file.error.status)
                }
            }
            if let damage = scanned.damage, !leavingOutDamagedGroups {
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
        let fields = BackupFields(
            version: BackupFields.currentVersion, created: ItemRecord.now(), sourceVaultID: Data(engine.store.vaultID),
            groups: try backupGroups(groupFile: Vault.systemGroupFile).filter { group in
                !leftOutGroups.contains { $0.group == group.name }
            })
        let writer = try translatingStoreErrors { () throws(StoreError) in try BackupStream.Writer(key: key) }
        try add(fields, to: writer)
        for item in items { try add(item, to: writer) }
        let sealed = try translatingStoreErrors { () throws(StoreError) in try writer.finish() }
        var report = ExportReport(
            exported: items.count, leftOut: leftOut, leftOutDeviceIdentifiers: leftOutDeviceIdentifiers,
            leftOutGroups: leftOutGroups)
        report.leftOutFiles = leftOutFiles
        return (sealed, report)
    }

    /// Archives `value` and seals it as the backup's next message; the archive is wiped.
    private func add(_ value: some Encodable, to writer: BackupStream.Writer) throws(VaultError) {
        var bytes: [UInt8]
        do {
            bytes = try VaultArchive.encode(
                value, options: VaultArchive.Options(maxSize: BackupStream.maximumFrameByteCount))
        } catch let error as EncodingError {
            throw VaultError(.param, "cannot archive the backup: \(error.redactedDescription)")
        } catch {
            throw VaultError(.param, "cannot archive the backup: \(error)")
        }
        defer { bytes.wipe() }
        try translatingStoreErrors { () throws(StoreError) in try writer.add(bytes) }
    }
}
