import VaultSystem

/// Moving a shared group to another Unix group (a new gid), so that a removed member cut off from the
/// old gid stays cut off: a process that still carries the old gid (a setgid copy of any program the
/// member made while in the group, a process that never restarted) then opens nothing of the group,
/// since the directory and every file in it belong to the new gid. Files a member wrote become the
/// owner's, so that the member keeps no owner's access to them either.
extension VaultStore {
    /// Gives shared `group`'s directory and every entry in it the Unix group `newGroupID`, and (as root)
    /// the vault owner's uid, under the group's write lock; returns the number of entries moved. The
    /// owner only; as another user than root it needs the new gid among its own groups, and fails on an
    /// entry another user owns (`permissionDenied`, naming it).
    @discardableResult
    package func moveGroup(_ group: GroupName, toUnixGroup newGroupID: UInt32) throws(StoreError) -> Int {
        _ = try ownerClassKeys("move a group to another Unix group")
        let moved = try withWriteLock(finishingMoves: true, groups: [group]) { (_) throws(StoreError) -> Int in
            let path = groupPath(group)
            guard let directory = try groupDirectory(group, create: false) else {
                throw StoreError(
                    .groupNotFound, "there is no group \(group) in the vault at \(self.path)", path: path.string)
            }
            let status: FileStatus
            do throws(Errno) {
                status = try directory.status()
            } catch {
                throw StoreError(.io, "cannot read \(path)", path: path, failed: .stat, error)
            }
            guard status.permissions == .sharedDirectory else {
                throw StoreError(
                    .invalidName,
                    "group \(group) is private, not shared with a Unix group: there is no member to remove; nothing "
                        + "was changed", path: path.string)
            }
            let owner: UInt32? = ProcessIdentity.effectiveUserID == 0 ? status.ownerID : nil
            let names: [String]
            do throws(Errno) {
                names = try directory.entryNames()
            } catch {
                throw StoreError(.io, "cannot list \(path)", path: path, failed: .readDirectory, error)
            }
            // The files first, the directory last: until then the old gid still reaches the directory,
            // and a failure half way leaves a group its current members can use.
            for name in names {
                do throws(Errno) {
                    try directory.setOwnerAt(name, user: owner, group: newGroupID)
                } catch {
                    let file = path / name
                    throw StoreError(
                        error == .notPermitted ? .permissionDenied : .io,
                        "cannot give \(file) to gid \(newGroupID): \(error) (run as root, which owns every file of "
                            + "a shared group it moves); run the command again to finish", path: file, failed: .chmod,
                        error)
                }
            }
            do throws(Errno) {
                try directory.setOwner(group: newGroupID)
                // chown may clear the setgid bit, which makes the files members write the group's.
                try directory.setPermissions(.sharedDirectory)
            } catch {
                throw StoreError(
                    .io, "cannot give \(path) to gid \(newGroupID): \(error); run the command again to finish",
                    path: path, failed: .chmod, error)
            }
            return names.count + 1
        }
        // The members of the new gid find the group, those of the old one no longer do.
        try refreshSharedGroupIndexes()
        return moved
    }
}
