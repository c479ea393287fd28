import VaultStore
import VaultSystem

/// Format 2's access groups as a keychain tool manages them: made private or shared with a Unix group,
/// listed, removed. Within one Unix user, groups stay enforced by this library; between users, by the
/// kernel (a shared group's key file is readable by its Unix group only).
extension Vault {
    /// The vault's format: 1 (one key for every group) or 2 (a key per group, shared groups).
    public var formatVersion: Int { Int(engine.store.formatVersion) }

    /// Whether this process opened the vault as a member of shared groups, without `master.key`.
    public var isMember: Bool { engine.store.isMember }

    /// One group as this process sees it.
    public struct GroupInfo: Sendable, Equatable {
        /// The group.
        public let group: AccessGroup
        /// Whether its key is kept for a Unix group's members; nil when this process cannot tell.
        public let isShared: Bool?
        /// The Unix group of a shared group.
        public let unixGroupID: UInt32?
        /// That Unix group's name in /etc/group, if it has one there.
        public let unixGroupName: String?
        /// How many items it holds, when this process may list it.
        public let itemCount: Int?
        /// Whether this process can use it.
        public let usable: Bool
    }

    /// Makes `group` (format 2, the vault's owner only): shared with the members of Unix group
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

    /// The groups this process can see: every group of the vault for its owner; for a member of shared
    /// groups (who may not list `groups/`), those its client names.
    public func groupInfos() throws(VaultError) -> [GroupInfo] {
        let names: [GroupName]
        if isMember {
            names = client.accessGroups.map(\.name)
        } else {
            names = try translatingStoreErrors { () throws(StoreError) in try engine.store.groups() }
        }
        return names.compactMap { name in
            guard let summary = engine.store.summary(of: name) else { return nil }
            return GroupInfo(
                group: AccessGroup(name), isShared: summary.isShared, unixGroupID: summary.unixGroupID,
                unixGroupName: summary.unixGroupID.flatMap { UserDatabase.group(id: $0)?.name },
                itemCount: summary.itemCount, usable: summary.usable)
        }
    }

    /// Gives `group` a new key and seals every item of it again, in place (format 2, the owner only);
    /// returns how many items were sealed again. See `VaultStore.rotateGroup`.
    @discardableResult
    public func rotateGroup(_ group: AccessGroup) throws(VaultError) -> Int {
        try translatingStoreErrors { () throws(StoreError) in try engine.store.rotateGroup(group.name) }
    }

    /// Removes `group` (format 2, the owner only); one that still holds items only with `force`.
    /// Returns the number of items removed with it.
    @discardableResult
    public func removeGroup(_ group: AccessGroup, force: Bool) throws(VaultError) -> Int {
        try translatingStoreErrors { () throws(StoreError) in try engine.store.removeGroup(group.name, force: force) }
    }
}
