import VaultStore
import VaultSystem

extension BackupBundle {
    /// One group of the vault a backup was made of (backup version 2): whether its key was kept for the
    /// members of a Unix group, and which, so that an import re-makes a missing group as it was. A
    /// version-1 backup has none (its groups are made private, as they always were).
    struct Group: Codable, Equatable {
        /// The access group.
        var name: String
        /// Whether it was shared with the members of a Unix group.
        var shared: Bool
        /// The Unix group's gid where the backup was made (shared groups only).
        var unixGroupID: UInt32?
        /// The Unix group's name on that machine, if it had one there: what an import
        /// resolves first, since a gid can name another group on another machine.
        var unixGroupName: String?
    }
}

extension Vault {
    /// The group file the static reader uses (`UserDatabase`; NSS modules cannot be loaded in the
    /// static CLI).
    static let systemGroupFile: String? = nil

    /// Every group of this vault as a backup records it, its Unix group named from `groupFile`.
    func backupGroups(groupFile: String?) throws(VaultError) -> [BackupBundle.Group] {
        let store = engine.store
        let names = try translatingStoreErrors { () throws(StoreError) in try store.groups() }
        return names.map { name in
            guard let summary = store.summary(of: name) else {
                return BackupBundle.Group(name: name.rawValue, shared: false)
            }
            let shared = summary.isShared ?? (summary.unixGroupID != nil)
            let gid = shared ? summary.unixGroupID : nil
            return BackupBundle.Group(
                name: name.rawValue, shared: shared, unixGroupID: gid,
                unixGroupName: gid.flatMap { UserDatabase.group(id: $0, groupFile: groupFile)?.name })
        }
    }

    /// What an import did about the backup's groups.
    struct GroupPreparation {
        /// The groups it made, described.
        var made: [String] = []
        /// The groups that exist here with another sharing than the backup records, described.
        var differing: [String] = []
    }

    /// Makes the groups of `bundle` that this vault does not have, as the backup records them: a shared
    /// group shared with the same Unix group (its name resolved in `groupFile` first; its gid when the
    /// backup has no name for it), a private group private. Every group is checked before any is made,
    /// and any refusal leaves the vault as it was: a Unix group this machine does not know, or one that
    /// this process may not give a directory to (not root, not a member), is refused with the fix. A
    /// shared group is never made private in silence. A group that exists keeps its own sharing (reported when it differs).
    func prepareGroups(_ recordedGroups: [BackupBundle.Group]?, name path: String, groupFile: String?)
        throws(VaultError) -> GroupPreparation
    {
        guard let groups = recordedGroups, !groups.isEmpty else { return GroupPreparation() }
        let store = engine.store
        var preparation = GroupPreparation()
        var toMake: [(group: AccessGroup, unixGroup: UInt32?, description: String)] = []
        for recorded in groups {
            let group = try AccessGroup(recorded.name)
            if let summary = store.summary(of: group.name), summary.usable {
                if let here = summary.isShared, here != recorded.shared {
                    preparation.differing.append(
                        "group \(group) is \(here ? "shared" : "private") here but was "
                            + (recorded.shared ? "shared with Unix group \(Self.describe(recorded))" : "private")
                            + " where the backup was made: its items were imported into it as it is")
                }
                continue
            }
            guard recorded.shared else {
                toMake.append((group, nil, "group \(group), private"))
                continue
            }
            let gid = try resolveUnixGroup(of: recorded, path: path, groupFile: groupFile)
            let name = UserDatabase.group(id: gid, groupFile: groupFile)?.name
            toMake.append(
                (
                    group, gid,
                    "group \(group), shared with Unix group \(name.map { "\($0) (gid \(gid))" } ?? "gid \(gid)")"
                ))
        }
        for made in toMake {
            do throws(VaultError) {
                try createGroup(made.group, unixGroup: made.unixGroup)
            } catch  where error.status == .duplicateItem {
                continue  // made by another process in between: it stands
            }
            preparation.made.append(made.description)
        }
        return preparation
    }

    /// The gid here of the Unix group that `recorded` was shared with: its name's in `groupFile`, else
    /// (when the backup names none: a group that only a directory service knew) its gid. Refuses a name
    /// this machine does not list (the same gid may be another group here) and a gid this process may
    /// not give a directory to.
    private func resolveUnixGroup(of recorded: BackupBundle.Group, path: String, groupFile: String?)
        throws(VaultError) -> UInt32
    {
        let gid: UInt32
        if let name = recorded.unixGroupName {
            guard let found = UserDatabase.group(named: name, groupFile: groupFile) else {
                throw VaultError(
                    .param,
                    "\(path) holds group \(recorded.name), shared with Unix group \(Self.describe(recorded)) where it "
                        + "was made, and \(groupFile ?? "this system") here has no group \(name): make it (`groupadd \(name)`), or make "
                        + "the access group yourself (`vault group create \(recorded.name) --unix-group GROUP`), then "
                        + "import again (nothing was imported)")
            }
            gid = found.id
        } else if let recordedID = recorded.unixGroupID {
            gid = recordedID
        } else {
            throw VaultError(
                .decode, "\(path) holds group \(recorded.name), shared with no Unix group: not a backup this build made"
            )
        }
        let uid = ProcessIdentity.effectiveUserID
        guard uid == 0 || ProcessIdentity.groupIDs.contains(gid) else {
            let owner = UserDatabase.user(id: uid)?.name
            let unix = UserDatabase.group(id: gid, groupFile: groupFile)?.name
            throw VaultError(
                .permissionDenied,
                "\(path) holds group \(recorded.name), shared with Unix group \(unix.map { "\($0) (gid \(gid))" } ?? "gid \(gid)"), "
                    + "and the vault's owner \(owner ?? "uid \(uid)") is not a member of it: the kernel lets only root and "
                    + "the group's members give a directory to it; add the owner to the group (`usermod -aG "
                    + "\(unix ?? String(gid)) \(owner ?? "OWNER")`, then log in again) and import again (nothing was "
                    + "imported)")
        }
        return gid
    }

    /// A recorded group's Unix group as messages name it: "vault-db (gid 1234)", or "gid 1234".
    static func describe(_ recorded: BackupBundle.Group) -> String {
        switch (recorded.unixGroupName, recorded.unixGroupID) {
        case (let name?, let gid?): return "\(name) (gid \(gid))"
        case (let name?, nil): return name
        case (nil, let gid?): return "gid \(gid)"
        case (nil, nil): return "(none)"
        }
    }
}
