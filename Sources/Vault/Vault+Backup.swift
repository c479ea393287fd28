import FoundationEssentials
import VaultArchive
import VaultCrypto
import VaultStore

/// What `export` wrote.
public struct ExportReport: Sendable, Hashable {
    /// Items in the backup.
    public let exported: Int
    /// `…ThisDeviceOnly` items left out: they never leave the device.
    public let leftOut: Int
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
}

/// The archive inside a backup: every item's record with its group.
struct BackupBundle: Codable {
    struct Item: Codable {
        var group: String
        var record: ItemRecord
    }
    var version: Int
    var created: Date
    var sourceVaultID: Data
    var items: [Item]
}

/// Backups: every item of every group of the vault, sealed under a passphrase (Argon2id +
/// XChaCha20-Poly1305, `docs/FORMAT.md`). They are vault-wide operations for the owner of the vault's
/// files, not scoped to the client's access groups.
extension Vault {
    static let deviceOnly: Set<Accessibility> = [
        .whenPasscodeSetThisDeviceOnly, .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly,
        .alwaysThisDeviceOnly,
    ]

    /// Writes a backup of every item to `path` (which must not exist), leaving out the
    /// `…ThisDeviceOnly` items. A damaged item file stops the export (run `vault check`).
    public func export(to path: String, passphrase: SecureBytes, limits: PassphraseKeyDerivation.Limits = .moderate)
        throws(VaultError) -> ExportReport
    {
        var items: [BackupBundle.Item] = []
        var leftOut = 0
        for name in try translatingStoreErrors({ try engine.store.groups() }) {
            let group = try AccessGroup(name.rawValue)
            let scanned = try engine.scan(group) { _ in true }
            if let locked = scanned.locked {
                throw VaultError(locked.status, "cannot export a locked vault: \(locked.message)", cause: locked)
            }
            if let damage = scanned.damage {
                throw VaultError(damage.status, "cannot export: \(damage.message) (run `vault check`)", cause: damage)
            }
            for item in scanned.items {
                if let accessible = item.record.attributes.accessible, Self.deviceOnly.contains(accessible) {
                    leftOut += 1
                    continue
                }
                items.append(BackupBundle.Item(group: group.rawValue, record: item.record))
            }
        }
        let bundle = BackupBundle(
            version: 1, created: ItemRecord.now(), sourceVaultID: Data(engine.store.vaultID), items: items)
        var bytes: [UInt8]
        do {
            bytes = try VaultArchive.encode(bundle, options: VaultArchive.Options(maxSize: BackupFile.maximumByteCount))
        } catch let error as EncodingError {
            throw VaultError(.param, "cannot archive the backup: \(error.redactedDescription)")
        } catch {
            throw VaultError(.param, "cannot archive the backup: \(error)")
        }
        defer { bytes.wipe() }
        try translatingStoreErrors {
            try bytes.withUnsafeBytes { try BackupFile.write($0, to: path, passphrase: passphrase, limits: limits) }
        }
        return ExportReport(exported: items.count, leftOut: leftOut)
    }

    /// Checks the backup at `path` without its passphrase and without reading it whole (a regular file
    /// of a plausible size, the backup's magic, a version this build reads, an Argon2id cost within
    /// `costCeiling`): what to run before asking for the passphrase.
    public static func inspectBackup(at path: String, costCeiling: PassphraseKeyDerivation.Limits = .sensitive)
        throws(VaultError)
    {
        try translatingStoreErrors { try BackupFile.inspect(at: path, ceiling: costCeiling) }
    }

    /// Adds the items of the backup at `path` to this vault with their attributes, dates and persistent
    /// references. An item whose primary key exists is reported as a duplicate and left alone, unless
    /// `replace` is set.
    /// A backup that asks for more Argon2id work than `costCeiling` is refused before any work.
    public func importBackup(
        from path: String, passphrase: SecureBytes, replace: Bool = false,
        costCeiling: PassphraseKeyDerivation.Limits = .sensitive
    ) throws(VaultError) -> ImportReport {
        let plaintext = try translatingStoreErrors {
            try BackupFile.read(from: path, passphrase: passphrase, ceiling: costCeiling)
        }
        let bundle: BackupBundle
        do {
            var bytes = plaintext.withUnsafeBytes { [UInt8]($0) }
            defer { bytes.wipe() }
            bundle = try VaultArchive.decode(
                BackupBundle.self, from: bytes, options: VaultArchive.Options(maxSize: BackupFile.maximumByteCount))
        } catch {
            throw VaultError(.decode, "\(path) opened but does not hold a vault backup: \(error)", cause: error)
        }
        guard bundle.version == 1 else {
            throw VaultError(.decode, "\(path) is a backup of version \(bundle.version); this build reads version 1")
        }
        return try withWriteLock { tx throws(VaultError) in
            var imported = 0
            var replaced = 0
            var duplicates: [String] = []
            var persistentIDs: [AccessGroup: Set<Data>] = [:]
            for item in bundle.items {
                let group = try AccessGroup(item.group)
                var record = item.record
                let id = try engine.itemID(group, record.primaryKey)
                if let existing = try engine.load(group, id) {
                    guard replace else {
                        duplicates.append(engine.describe(record.itemClass, record.attributes, group: group))
                        continue
                    }
                    // The replacement moves the item's history forward, never back.
                    record.generation = max(record.generation, existing.generation &+ 1)
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
                try engine.save(record, group: group, id: id, in: tx)
                imported += 1
            }
            return ImportReport(imported: imported, replaced: replaced, duplicates: duplicates)
        }
    }
}
