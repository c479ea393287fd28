import VaultCrypto
import VaultSystem

/// How a replicated group comes to a vault: its directory made (private, or shared with a Unix group)
/// with the replication's settings file, `.lock` and `group.key`, once the replication agreed; its key
/// exported for other machines; and the files an operator hands the replication, read safely.
extension VaultStore {
    /// Makes replicated group `group` with key `key`, under the vault's lock: `group` must not exist
    /// here; `agree` (the replication's registration, or its check of one) runs first, and the
    /// directory is made only when it succeeds: private to the owner, or with `unixGroup` (a gid) shared
    /// as `createGroup` shares a group (the directory 2770, `group.key` and the settings 0640, the
    /// cache's files 0660). `settings` is the replication's file, which members read and only the
    /// owner writes. On a failure, what was made is removed, so that the group can be made again.
    package func addReplicatedGroup(
        _ group: GroupName, key: ReplicatedGroupKey, unixGroup: UInt32?, settings: (name: String, bytes: [UInt8]),
        what: String, agree: () throws(StoreError) -> Void
    ) throws(StoreError) {
        let classKeys = try ownerClassKeys(what)
        if let unixGroup {
            // Before anything is registered or made: the kernel lets only root and the Unix group's
            // members give a directory to it.
            let uid = ProcessIdentity.effectiveUserID
            guard uid == 0 || ProcessIdentity.groupIDs.contains(unixGroup) else {
                throw StoreError(
                    .permissionDenied,
                    "uid \(uid) is not a member of the Unix group with gid \(unixGroup), and the kernel lets only root "
                        + "and the group's members give a directory to it: nothing was changed")
            }
        }
        var file = key.file
        file = GroupKeyFile(groupID: file.groupID, isShared: unixGroup != nil, secrets: file.secrets, isFleet: true)
        try withWriteLock(finishingMoves: false) { (_) throws(StoreError) in
            try requireCurrentKeys()
            if try groupDirectory(group, create: false) != nil {
                throw StoreError(
                    .vaultAlreadyExists, "group \(group) already exists in the vault at \(path); nothing was changed",
                    path: groupPath(group).string)
            }
            try agree()
            do throws(StoreError) {
                try fillReplicatedGroup(
                    group, file: file, settings: settings, unixGroup: unixGroup, classKeys: classKeys)
            } catch {
                retireDirectory(of: group)
                forgetKeysAndReplica(of: group)
                try? VaultDirectory.removeTree(group.rawValue, in: groupsDirectory, path: groupsPath)
                throw error
            }
        }
    }

    private func fillReplicatedGroup(
        _ group: GroupName, file: GroupKeyFile, settings: (name: String, bytes: [UInt8]), unixGroup: UInt32?,
        classKeys: ClassKeys
    ) throws(StoreError) {
        if let unixGroup { try makeSharedGroupDirectory(group, unixGroup: unixGroup) }
        guard let directory = try groupDirectory(group, create: true) else {
            throw StoreError(.io, "the group directory \(groupPath(group)) disappeared while it was being made")
        }
        let shared = unixGroup != nil
        // Members read the settings (they reach the replica themselves); only the owner writes them.
        try AtomicFile.replace(
            settings.name, contents: .plain(settings.bytes), in: directory, directoryPath: groupPath(group),
            permissions: shared ? .ownerWriteGroupRead : .ownerReadWrite)
        let lockPath = groupPath(group) / Self.lockFileName
        let lock: FileDescriptor
        do {
            // Made anew (the directory is new): anything already under the name was put there by a member
            // of a shared group since, and is never written to nor given a mode.
            lock = try directory.openAt(
                Self.lockFileName, [.readWrite, .create, .exclusiveCreate, .nonBlocking],
                permissions: shared ? .ownerAndGroupReadWrite : .ownerReadWrite)
        } catch {
            throw StoreError.system(error, .open, "create the lock file", path: lockPath)
        }
        defer { try? lock.close() }
        do {
            // The umask must not take the members' bits away: they lock it to write.
            if shared { try lock.setPermissions(.ownerAndGroupReadWrite) }
        } catch {
            throw StoreError.system(error, .chmod, "set the mode of the lock file", path: lockPath)
        }
        WriterMark.idle.write(to: lock)
        try writeGroupKeyFile(file, group: group, in: directory, classKeys: classKeys)
        forgetKeysAndReplica(of: group)
    }

    /// Replicated group `group`'s key as a file for other machines (its members' form: the keys in the
    /// clear with their MAC, bound to the group's name only). Secret: whoever holds it reads the group.
    package func exportReplicatedGroupKey(_ group: GroupName) throws(StoreError) -> SecureBytes {
        _ = try ownerClassKeys("export a group's key")
        guard let file = try loadGroupKeyFile(group), file.isFleet else { throw try notAFleetGroup(group) }
        let portable = GroupKeyFile(groupID: file.groupID, isShared: true, secrets: file.secrets, isFleet: true)
        let sealKey: SymmetricKey
        do {
            sealKey = try SymmetricKey.random()
        } catch {
            throw StoreError.crypto(error, "cannot export the key of group \(group)")
        }
        return try portable.encoded(group: group, vaultID: [], sealKey: sealKey)
    }

    /// What an exported key file is sealed in: the group key file in its members' form, under a
    /// passphrase (Argon2id) or the 32 bytes of a backup key file, never in the clear.
    static let exportedKeyEnvelope = PassphraseEnvelope(
        magic: Array("VFKX".utf8), what: "a fleet group's key file", acceptsRawKey: true)

    /// Writes `exportReplicatedGroupKey(group)` sealed under `key` to the new file `path` (0600, created
    /// exclusively and durably; an existing file is never written over).
    package func exportReplicatedGroupKey(_ group: GroupName, to path: String, sealedWith key: BackupKey)
        throws(StoreError)
    {
        let sealed = try Self.exportedKeyEnvelope.seal(try exportReplicatedGroupKey(group), key: key.key)
        let file = FilePath(path)
        let directory = try VaultDirectory.openOutside(file.parent, verb: "open the directory of the key file")
        defer { try? directory.close() }
        do {
            try AtomicFile.createExclusively(
                file.lastComponent, contents: .plain(sealed), in: directory, directoryPath: file.parent)
        } catch  where error.errno == .fileExists {
            throw StoreError(
                .vaultAlreadyExists, "\(path) already exists; a key file is never written over", path: path)
        }
    }

    /// The bytes of a key file that `exportReplicatedGroupKey(_:to:sealedWith:)` (or an earlier build,
    /// in the clear) wrote. One that others can access is refused: whoever reads a clear one holds the
    /// group's keys, and a sealed one is open to guessing its passphrase.
    package static func readExportedGroupKey(_ path: String) throws(StoreError) -> [UInt8] {
        var (bytes, _, permissions) = try readOperatorFile(
            path, limit: GroupKeyFile.maximumByteCount + PassphraseEnvelope.overheadByteCount,
            what: "the group key file")
        guard permissions.rawValue & 0o077 == 0 else {
            let sealed = exportedKeyEnvelope.isSealed(bytes)
            bytes.wipe()
            throw StoreError(
                .insecureFile,
                "\(path) holds a fleet group's keys \(sealed ? "sealed" : "in the clear") and others can access it "
                    + "(mode \(permissions)): `chmod 600 \(path)`; "
                    + (sealed
                        ? "if anyone else may have read it, export the key again under a new passphrase"
                        : "if anyone else may have read it, they hold the group's keys: move its items to a new "
                            + "group, then `vault group rm NAME --force --everywhere`") + "; nothing was joined",
                path: path)
        }
        return bytes
    }

    /// How an exported key file is sealed, nil for one in the clear (an earlier build's export).
    package static func sealingOfExportedGroupKey(_ bytes: [UInt8]) -> BackupFile.Sealing? {
        guard exportedKeyEnvelope.isSealed(bytes), bytes.count > 5 else { return nil }
        return bytes[5] == PassphraseEnvelope.rawKey ? .keyFile : .passphrase
    }

    /// The group key file that the sealed key file `bytes` (read from `path`) holds, opened with `key`.
    package static func openExportedGroupKey(_ bytes: [UInt8], key: BackupKey, path: String) throws(StoreError)
        -> SecureBytes
    {
        try exportedKeyEnvelope.open(bytes, key: key.key, path: path)
    }

    /// A small file outside the vault that an operator names (a replica's password file, a group key
    /// file): a regular file (no symlink, FIFO or device) of at most `limit` bytes, with the uid that owns
    /// it and its permissions. `what` names it in messages.
    package static func readOperatorFile(_ path: String, limit: Int, what: String) throws(StoreError)
        -> (bytes: [UInt8], ownerID: UInt32, permissions: FilePermissions)
    {
        let file = FilePath(path)
        let directory = try VaultDirectory.openOutside(file.parent, verb: "open the directory of \(what)")
        defer { try? directory.close() }
        let fd: FileDescriptor
        let status: FileStatus
        do {
            (fd, status) = try SmallFile.openRegular(file.lastComponent, in: directory, path: file)
        } catch {
            throw StoreError(error.code, "\(what): \(error.message)", path: path, cause: error)
        }
        defer { try? fd.close() }
        return (try SmallFile.read(fd, status: status, path: file, limit: limit), status.ownerID, status.permissions)
    }
}
