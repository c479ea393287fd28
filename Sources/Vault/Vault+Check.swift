import VaultStore

/// One item file that failed verification.
public struct ItemProblem: Sendable, Hashable, CustomStringConvertible {
    /// The file's path.
    public let path: String
    /// The group directory it is in.
    public let group: String
    /// `decode` for a file that fails authentication or decoding; `io` or `permissionDenied` for one
    /// that cannot be read.
    public let status: VaultStatus
    /// Why it failed (never any content of the file).
    public let reason: String
    /// Whether the file failed authentication (tampered with, damaged, truncated, moved from another
    /// item, group or vault, or an older copy of itself): what `removeDamaged` removes. False for a
    /// file that is locked, cannot be read, is unsafe or of a newer format, or decrypted but does not
    /// decode: those may be sound, and are never removed.
    public let failedAuthentication: Bool
    /// The item file's id, when the problem is an item file or one of its kept versions (not a group
    /// directory).
    let itemID: ItemID?
    /// The generation of the kept version the problem is, when it is one (not the item's file).
    let version: UInt64?

    /// Whether the problem is a kept version of an item (its history), not an item file.
    public var isKeptVersion: Bool { version != nil }

    /// Whether the problem is the group's, not one file's: its directory cannot be listed, or its
    /// `group.key` cannot be read, so none of its items could be checked (they may all be sound).
    public var concernsGroup: Bool { itemID == nil && version == nil }

    init(
        path: String, group: String, status: VaultStatus, reason: String, itemID: ItemID? = nil,
        concernsHistory: Bool = false
    ) {
        self.path = path
        self.group = group
        self.status = status
        self.reason = reason
        self.failedAuthentication = false
        self.itemID = itemID
        // A history that cannot be listed counts among the kept versions (generation 0 is none's).
        self.version = concernsHistory ? 0 : nil
    }

    /// The problem of `group` as a whole (its key, its directory) about `path`: `status`, and `message`
    /// without its leading copy of the path.
    init(path: String, group: String, status: VaultStatus, message: String) {
        self.init(path: path, group: group, status: status, reason: Vault.reason(message, path: path))
    }

    /// The problem of item file `id` of `group` that `error` is (of its kept version `version`).
    init(path: String, group: AccessGroup, id: ItemID, error: VaultError, version: UInt64? = nil) {
        self.path = path
        self.group = group.rawValue
        self.status = error.status
        self.reason = Vault.reason(error.message, path: path)
        self.failedAuthentication = Self.isAuthenticationFailure(error, of: path)
        self.itemID = id
        self.version = version
    }

    /// Whether `error`, from reading the item file (or kept version) at `path`, says that file is not
    /// authentic. Only the store's integrity errors about that file are: a locked class, an unreadable
    /// or unsafe file, a newer format (the store's `unsupportedFormat`, also `decode` above it) and a
    /// record that does not decode are not, and neither is a damaged `group.key` or vault marker met on
    /// the way (a member can plant one): removing the file then would lose a sound item.
    static func isAuthenticationFailure(_ error: VaultError, of path: String) -> Bool {
        guard let cause = error.cause as? StoreError, cause.code == .integrity else { return false }
        return cause.path == nil || cause.path == path
    }

    /// The path and the reason.
    public var description: String { "\(path): \(reason)" }
}

/// What `verifyAll()` found.
public struct VerificationReport: Sendable, Hashable {
    /// The number of groups checked.
    public let groupCount: Int
    /// The number of item files checked.
    public let itemCount: Int
    /// The number of kept versions (item history) checked.
    public let versionCount: Int
    /// The damaged or unreadable files (items and kept versions), in group and file-name order; empty
    /// when all are sound.
    public let problems: [ItemProblem]
}

/// What `search` found: the readable matches and the files it could not read.
public struct SearchResult: Sendable {
    /// The matching items, as `copyMatching` returns them (at most the query's limit); empty when none.
    public let items: [MatchedItem]
    /// The item files of the searched groups that failed authentication or decoding, or could not be
    /// read, by path: any of them may hold an item that would have matched.
    public let problems: [ItemProblem]
}

/// A group directory present in the vault.
public struct StoredGroup: Sendable, Hashable {
    /// The group.
    public let group: AccessGroup
    /// How many item files it holds.
    public let itemCount: Int
}

/// What `verifiedGroups()` found.
public struct GroupVerification: Sendable, Hashable {
    /// The groups whose directory could be listed, sorted by name, with their item counts.
    public let groups: [StoredGroup]
    /// The damaged or unreadable item files and the group directories that cannot be listed, in group
    /// and file-name order; empty when all are sound.
    public let problems: [ItemProblem]
}

extension Vault {
    /// Decrypts and decodes every item file in every group of the vault, whatever groups the client
    /// has: an integrity check that reveals no content, only which files are damaged. A file that
    /// fails is reported by path and the check goes on; only a failure to list the vault itself
    /// throws. A file of a locked class (its class key is missing) is a problem too: it cannot be
    /// verified.
    public func verifyAll() throws(VaultError) -> VerificationReport {
        let checked = try verifyGroups(lockedIsProblem: true)
        return VerificationReport(
            groupCount: checked.groupCount, itemCount: checked.groups.map(\.itemCount).reduce(0, +),
            versionCount: checked.versionCount, problems: checked.problems)
    }

    /// The groups that have a directory in the vault, as `storedGroups` gives them, with every item
    /// file and kept version decrypted and verified as `verifyAll` does: the damaged or unreadable ones (and group
    /// directories that cannot be listed, which are left out of `groups`) are the problems. A file of a
    /// locked class is counted but not verified, and is no problem.
    public func verifiedGroups() throws(VaultError) -> GroupVerification {
        let checked = try verifyGroups(lockedIsProblem: false)
        return GroupVerification(groups: checked.groups, problems: checked.problems)
    }

    private func verifyGroups(lockedIsProblem: Bool) throws(VaultError) -> (
        groupCount: Int, groups: [StoredGroup], versionCount: Int, problems: [ItemProblem]
    ) {
        let names = try translatingStoreErrors { () throws(StoreError) in try engine.store.groups() }
        var problems: [ItemProblem] = []
        var groups: [StoredGroup] = []
        var versionCount = 0
        for name in names {
            let verified = verifyGroup(name, lockedIsProblem: lockedIsProblem)
            problems += verified.problems
            if let count = verified.itemCount {
                groups.append(StoredGroup(group: AccessGroup(name), itemCount: count))
                // Its versions need the key that its items could not get.
                if verified.problems.contains(where: \.concernsGroup) { continue }
                let versions = verifyVersions(name, lockedIsProblem: lockedIsProblem)
                versionCount += versions.count
                problems += versions.problems
            }
        }
        return (names.count, groups, versionCount, problems)
    }

    /// Decrypts and decodes every kept version of group `name`'s items (`verifyGroup` for history):
    /// how many there are, and the problems met. A version must open as its item's and hold the
    /// generation its name says.
    func verifyVersions(_ name: GroupName, lockedIsProblem: Bool) -> (count: Int, problems: [ItemProblem]) {
        let store = engine.store
        let group = AccessGroup(name)
        let versions: [(id: ItemID, generation: UInt64)]
        do throws(VaultError) {
            versions = try translatingStoreErrors { () throws(StoreError) in try store.versionFiles(in: name) }
        } catch {
            // The group's items were checked; its history could not be listed.
            return (
                0,
                [
                    ItemProblem(
                        path: store.path(of: name), group: name.rawValue, status: error.status, reason: error.message,
                        concernsHistory: true)
                ]
            )
        }
        var problems: [ItemProblem] = []
        var count = 0
        for (id, generation) in versions {
            let item = ItemLocation(group: name, id: id)
            do throws(VaultError) {
                let record = try store.readVersion(item, generation: generation) { (bytes, path) throws(VaultError) in
                    try engine.decode(bytes, path: path)
                }
                guard record != nil else { continue }  // pruned meanwhile
                count += 1
            } catch {
                count += 1
                if error.status == .interactionNotAllowed && !lockedIsProblem { continue }
                problems.append(
                    ItemProblem(
                        path: store.versionPath(item, generation: generation), group: group, id: id, error: error,
                        version: generation))
            }
        }
        return (count, problems)
    }

    /// Decrypts and decodes every item file of group `name`: how many there are (a damaged one
    /// counted) and the problems met; a directory that cannot be listed is a problem of its own, with
    /// no count. A `group.key` that cannot be read is one problem for the group (its items are counted,
    /// not checked), not one per item. A file of a locked class is counted, and a problem only when
    /// `lockedIsProblem`.
    func verifyGroup(_ name: GroupName, lockedIsProblem: Bool) -> (itemCount: Int?, problems: [ItemProblem]) {
        let store = engine.store
        let group = AccessGroup(name)
        let ids: [ItemID]
        do throws(VaultError) {
            ids = try translatingStoreErrors { () throws(StoreError) in try store.itemIDs(in: name) }
        } catch {
            return (
                nil,
                [
                    ItemProblem(
                        path: store.path(of: name), group: name.rawValue, status: error.status, reason: error.message)
                ]
            )
        }
        var problems: [ItemProblem] = []
        var itemCount = 0
        for id in ids {
            let path = engine.filePath(group, id)
            do throws(VaultError) {
                guard let record = try engine.load(group, id) else { continue }  // removed meanwhile
                itemCount += 1
                // Authentication binds the file to its name, so a mismatch here means the file was
                // written wrongly, not tampered with; it would still never be found by its key.
                if try engine.itemID(group, record.primaryKey) != id {
                    problems.append(
                        ItemProblem(
                            path: path, group: name.rawValue, status: .decode,
                            reason: ItemEngine.misnamedRecord, itemID: id))
                }
            } catch {
                itemCount += 1
                if error.status == .interactionNotAllowed && !lockedIsProblem { continue }
                let keyPath = store.keyPath(of: name)
                if (error.cause as? StoreError)?.path == keyPath {
                    problems.append(
                        ItemProblem(path: keyPath, group: name.rawValue, status: error.status, message: error.message))
                    return (ids.count, problems)
                }
                problems.append(ItemProblem(path: path, group: group, id: id, error: error))
            }
        }
        return (itemCount, problems)
    }

    /// The message without a leading copy of the path, which the problem carries on its own.
    static func reason(_ message: String, path: String) -> String {
        guard message.hasPrefix(path + " ") else { return message }
        return String(message.dropFirst(path.count + 1))
    }

    /// The groups that have a directory in the vault, whatever groups the client has, with their item
    /// counts, sorted by name.
    public func storedGroups() throws(VaultError) -> [StoredGroup] {
        let store = engine.store
        // A member may not list the groups: it sees those shared with its Unix groups.
        let groups =
            isMember
            ? store.groupsSharedWithThisProcess()
            : try translatingStoreErrors { () throws(StoreError) in try store.groups() }
        var result: [StoredGroup] = []
        for name in groups {
            let count = try translatingStoreErrors { () throws(StoreError) in try store.itemIDs(in: name).count }
            result.append(StoredGroup(group: AccessGroup(name), itemCount: count))
        }
        return result
    }
}
