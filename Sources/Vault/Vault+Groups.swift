import VaultStore
import VaultSystem

/// Access groups as a keychain tool manages them: made private or shared with a Unix group,
/// listed, removed. Within one Unix user, groups stay enforced by this library; between users, by the
/// kernel (a shared group's key file is readable by its Unix group only).
extension Vault {
    /// Whether this process opened the vault as a member of shared groups, without `master.key`.
    public var isMember: Bool { engine.store.isMember }

    /// The shared groups of this vault whose Unix group this process is in, as the owner's indexes name
    /// them: what a member, which may not list the vault's groups, can find.
    public var sharedGroups: [AccessGroup] { engine.store.groupsSharedWithThisProcess().map(AccessGroup.init) }

    /// One group as this process sees it.
    public struct GroupInfo: Sendable, Equatable {
        /// The group.
        public let group: AccessGroup
        /// Whether its key is kept for a Unix group's members; nil when this process cannot tell.
        public let isShared: Bool?
        /// The Unix group of a shared group.
        public let unixGroupID: UInt32?
        /// That Unix group's name, if the system has one for its gid.
        public let unixGroupName: String?
        /// How many item files it holds (a damaged one included), when this process may list it; 0 for a
        /// group that is not present.
        public let itemCount: Int?
        /// Whether this process holds the group's key and can use it (for a group that is not present:
        /// whether its first write would make it, which only the owner's does).
        public let usable: Bool
        /// Whether the group has a directory in the vault; false for a group that only the client names.
        public let isPresent: Bool
    }

    /// What `listGroups()` found: the groups and the item files that failed verification.
    public struct GroupListing: Sendable {
        /// The groups this process can see (`listGroups`), sorted by name.
        public let groups: [GroupInfo]
        /// The damaged or unreadable item files of the groups verified, and the group directories that
        /// could not be listed, in group and file-name order; empty when all are sound.
        public let problems: [ItemProblem]
    }

    /// Makes `group` (the vault's owner only): shared with the members of Unix group
    /// `unixGroup` (a gid), or private to the owner when nil. Refuses (`duplicateItem`) a group that
    /// exists.
    public func createGroup(_ group: AccessGroup, unixGroup: UInt32?) throws(VaultError) {
        do throws(StoreError) {
            try engine.store.createGroup(group.name, unixGroup: unixGroup)
        } catch  where error.code == .vaultAlreadyExists {
            throw VaultError(.duplicateItem, error.message, cause: error)
        } catch {
            throw VaultError(error)
        }
    }

    /// The groups this process can see, and every item file of them decrypted and verified as
    /// `verifyAll` does (no content is read out; a file of a locked class is counted, not verified).
    /// The owner sees every group of the vault; a member of shared groups (who may not list `groups/`)
    /// those its client names and those shared with its Unix groups (`sharedGroups`), and verifies only
    /// those it holds the key of: of the others it learns
    /// neither item names nor a count. The client's groups that have no directory yet are listed too
    /// (`isPresent` false), so that the group adds go to is always there.
    public func listGroups() throws(VaultError) -> GroupListing {
        let store = engine.store
        let names: [GroupName]
        if isMember {
            names = client.accessGroups.map(\.name) + store.groupsSharedWithThisProcess()
        } else {
            // The members' indexes made again (a vault whose shared groups are older than them gets
            // them here); they only point, so a failure is no reason to list nothing.
            try? store.refreshSharedGroupIndexes()
            names = try translatingStoreErrors { () throws(StoreError) in try store.groups() }
        }
        var infos: [GroupInfo] = []
        var problems: [ItemProblem] = []
        for name in Set(names + client.accessGroups.map(\.name)).sorted() {
            guard let summary = store.summary(of: name) else {
                guard client.accessGroups.contains(AccessGroup(name)) else { continue }
                infos.append(
                    GroupInfo(
                        group: AccessGroup(name), isShared: nil, unixGroupID: nil, unixGroupName: nil, itemCount: 0,
                        usable: !isMember, isPresent: false))
                continue
            }
            var itemCount = summary.itemCount
            // A member verifies only the groups it holds the key of; the owner every group, so that a
            // group whose key cannot be read shows its files as what they are: unreadable.
            if summary.usable || !isMember {
                let verified = verifyGroup(name, lockedIsProblem: false)
                problems += verified.problems
                itemCount = verified.itemCount
            } else if let failure = summary.keyFailure {
                // A member's group whose key is damaged or unsafe is said, not shown as merely unusable.
                let path = failure.path ?? store.path(of: name)
                problems.append(
                    ItemProblem(
                        path: path, group: name.rawValue, status: VaultError(failure).status, message: failure.message))
            }
            infos.append(
                GroupInfo(
                    group: AccessGroup(name), isShared: summary.isShared, unixGroupID: summary.unixGroupID,
                    unixGroupName: summary.unixGroupID.flatMap { UserDatabase.group(id: $0)?.name },
                    itemCount: itemCount, usable: summary.usable, isPresent: true))
        }
        return GroupListing(groups: infos, problems: problems)
    }

    /// Gives `group` a new key and seals every item of it again, in place (the owner only);
    /// returns how many items were sealed again. See `VaultStore.rotateGroup`. A fleet group's key is
    /// rotated on every machine of the group (`rotateFleetGroup(_:revoking:)`).
    @discardableResult
    public func rotateGroup(_ group: AccessGroup) throws(VaultError) -> Int {
        if engine.store.isFleetGroup(group.name), hasFleetSupport {
            return try rotateFleetGroup(group).itemsResealed
        }
        return try translatingStoreErrors { () throws(StoreError) in try engine.store.rotateGroup(group.name) }
    }

    /// Gives shared `group`'s directory and files the Unix group `gid` (the owner only): the step of
    /// removing a member that leaves whatever carries the old gid opening nothing. Returns how many
    /// entries it moved. See `VaultStore.moveGroup`.
    @discardableResult
    public func moveGroup(_ group: AccessGroup, toUnixGroup gid: UInt32) throws(VaultError) -> Int {
        try translatingStoreErrors { () throws(StoreError) in
            try engine.store.moveGroup(group.name, toUnixGroup: gid)
        }
    }

    /// Removes `group` (the owner only); one that still holds items only with `force`.
    /// Returns the number of items removed with it.
    @discardableResult
    public func removeGroup(_ group: AccessGroup, force: Bool) throws(VaultError) -> Int {
        try translatingStoreErrors { () throws(StoreError) in try engine.store.removeGroup(group.name, force: force) }
    }
}
