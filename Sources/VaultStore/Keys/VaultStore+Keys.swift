import VaultCrypto
import VaultSystem

/// The keys of an open store: which class keys it could load, the derived keys of each group, item
/// ids, and the passphrase that wraps `master.key`.
extension VaultStore {
    /// The class keys a process can have: all of them from a key file or a passphrase; in a passphrase
    /// vault opened without one, the `always` key from `always.key` and whatever `vault unlock` cached.
    /// The cache is tried before the passphrase is asked for, so that an unlocked vault asks nothing.
    static func loadClassKeys(
        directory: FileDescriptor, path: FilePath, markerBytes: [UInt8], keySource: KeySource
    ) throws(StoreError) -> ClassKeys {
        let wrapped: [UInt8]
        let keyPath: FilePath
        // A plain master.key is read into the allocation the class keys are made in.
        let read = try MasterKeyFile.read(
            in: directory, vaultPath: path, source: keySource,
            deriving: ClassKeys.derivations(master: .firstInAllocation))
        switch read.contents {
        case .key(let master) where !read.derived.isEmpty:
            return ClassKeys.assemble(master: master, derived: read.derived)
        case .key(let master): return try ClassKeys(master: master)
        case .wrapped(let bytes, let path): (wrapped, keyPath) = (bytes, path)
        }
        let alwaysFile = try AlwaysKeyFile.load(in: directory, vaultPath: path)
        // Cached class keys count only if they are this vault's (a stale or foreign entry is ignored).
        var afterFirstUnlock: SymmetricKey?
        var whenUnlocked: SymmetricKey?
        if keySource.usesUnlockCache, let alwaysFile, let vaultID = UnlockCache.claimedVaultID(markerBytes) {
            let cached = UnlockCache.read(vaultID: vaultID)
            afterFirstUnlock = cached.afterFirstUnlock.flatMap { alwaysFile.verifies($0, .afterFirstUnlock) ? $0 : nil }
            whenUnlocked = cached.whenUnlocked.flatMap { alwaysFile.verifies($0, .whenUnlocked) ? $0 : nil }
            if let afterFirstUnlock, let whenUnlocked {
                return ClassKeys(
                    always: alwaysFile.always, afterFirstUnlock: afterFirstUnlock, whenUnlocked: whenUnlocked)
            }
        }
        do {
            let master = try MasterKeyFile.unwrap(wrapped, path: keyPath, vaultPath: path, source: keySource)
            return try ClassKeys(master: master)
        } catch  where error.code == .locked {
            // No passphrase to be had: open locked. `Always` items stay readable; the others say locked.
            guard let alwaysFile else { throw error }
            return ClassKeys(always: alwaysFile.always, afterFirstUnlock: afterFirstUnlock, whenUnlocked: whenUnlocked)
        }
    }

    /// The keys of `group`, read once per store from its `group.key` (see `VaultStore+Groups`).
    func keys(for group: GroupName) throws(StoreError) -> GroupKeys {
        if let keys = keyCache.withLock({ $0.groupKeys[group] }) { return keys }
        let keys = try loadGroupKeys(group)
        if !keys.isAbsent { keyCache.withLock { $0.groupKeys[group] = keys } }
        return keys
    }

    /// The owner's class keys; for a member, a `permissionDenied` error saying that only the vault's
    /// owner can do `what`.
    func ownerClassKeys(_ what: String) throws(StoreError) -> ClassKeys {
        guard let classKeys else {
            throw StoreError(
                .permissionDenied,
                "only the owner of the vault at \(path) can \(what); this process reads its shared groups only")
        }
        return classKeys
    }

    /// The id of the item whose canonical primary key is `primaryKey` in `group`: a keyed BLAKE2b
    /// under the group's index key, so names reveal nothing and differ between groups.
    package func itemID(group: GroupName, primaryKey: [UInt8]) throws(StoreError) -> ItemID {
        try keys(for: group).itemID(primaryKey)
    }

    /// The encryption key of `protectionClass` in `item`'s group under key `generation` (the group's
    /// current one when nil), with the group's keys it came from (one look-up for the caller's binding
    /// and generation too); `locked`, naming the file, when the store lacks that class key.
    func encryptionKey(_ protectionClass: ProtectionClass, for item: ItemLocation, generation: UInt32? = nil)
        throws(StoreError) -> (key: SymmetricKey, keys: GroupKeys)
    {
        var keys = try keys(for: item.group)
        if let generation, keys.encryption(protectionClass, generation: generation) == nil,
            keys.isShared || classKeys?.key(protectionClass) != nil
        {
            // Written under a key generation this store has not seen: the group was rotated since its
            // key file was read. Read it again, once.
            keyCache.withLock { _ = $0.groupKeys.removeValue(forKey: item.group) }
            keys = try self.keys(for: item.group)
            guard let key = keys.encryption(protectionClass, generation: generation) else {
                let path = itemPath(item)
                throw StoreError(
                    .integrity,
                    "\(path) is sealed under key generation \(generation) of group \(item.group), which its group.key "
                        + "does not hold: it is damaged, or older than the group's last rotation",
                    path: path.string)
            }
            return (key, keys)
        }
        guard let key = keys.encryption(protectionClass, generation: generation ?? keys.currentGeneration) else {
            let path = itemPath(item)
            throw StoreError(
                .locked,
                "\(path) is protected by class \(protectionClass) and the vault at \(self.path) is locked for it; "
                    + "run `vault unlock` (or give the passphrase)",
                path: path.string)
        }
        return (key, keys)
    }

    /// The path of `master.key`, as messages and prompts name it.
    package var masterKeyPath: String { (location / MasterKeyFile.fileName).string }

    /// Whether `master.key` is wrapped under a passphrase (read now: `passwd` may have changed it).
    package var isPassphraseProtected: Bool {
        (try? directory.statusAt(MasterKeyFile.fileName))?.size == Int64(WrappedMasterKey.byteCount)
    }

    /// Whether this store can write items of `protectionClass` in `group`: a shared group cannot be
    /// locked, so there every class is available; elsewhere as `isAvailable(_:)`.
    package func isAvailable(_ protectionClass: ProtectionClass, in group: GroupName) -> Bool {
        if (try? keys(for: group))?.isShared == true { return true }
        return isAvailable(protectionClass)
    }

    /// Whether this store holds the key of `protectionClass` (always true for a key-file vault).
    package func isAvailable(_ protectionClass: ProtectionClass) -> Bool {
        // A member uses shared groups only, where every class behaves as `always`.
        guard let classKeys else { return true }
        return classKeys.key(protectionClass) != nil
    }

    /// Re-wraps the master key in `master.key` under `newPassphrase` (nil stores it plainly), under the
    /// write lock; the key itself and every item stay as they are. Atomic: a crash leaves the old file
    /// (old passphrase) or the new one. Refused for a vault whose key is in an external key file.
    package func changePassphrase(
        to newPassphrase: SecureBytes?, limits: PassphraseKeyDerivation.Limits = .moderate,
        keySource: KeySource = KeySource()
    ) throws(StoreError) {
        if let keyFile = keySource.keyFile {
            throw StoreError(
                .invalidName,
                "the key of the vault at \(path) is in the external file \(keyFile); a passphrase "
                    + "protects master.key only")
        }
        guard let masterKey else {
            throw StoreError(
                .locked, "the vault at \(path) was opened without its passphrase; give the current one to change it")
        }
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in
            try requireCurrentKeys()
            if newPassphrase != nil {
                // Written first: a crash after it leaves a plain master.key and a harmless always.key.
                try AlwaysKeyFile.write(try ownerClassKeys("change its passphrase"), in: directory, vaultPath: location)
            }
            try MasterKeyFile.rewrite(
                masterKey, passphrase: newPassphrase, limits: limits, in: directory, vaultPath: location)
        }
    }
}

/// The keys of each group a store has read, and which `group.key` they came from.
struct GroupKeyCache {
    /// The derived keys of each group seen.
    var groupKeys: [GroupName: GroupKeys] = [:]
    /// Which file each group's `group.key` was when its keys were read (inode and change time); a
    /// writer that finds another one under the lock reads the keys again (a rotation replaced the file).
    var groupKeyInodes: [GroupName: GroupKeyFileIdentity] = [:]
}
