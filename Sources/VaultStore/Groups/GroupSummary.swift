import VaultSystem

/// What a caller can learn of one group.
package struct GroupSummary: Sendable {
    /// The group's name.
    package let name: GroupName
    /// Whether its key is kept for the members of a Unix group; nil when the caller cannot tell.
    package let isShared: Bool?
    /// The Unix group of a shared group's directory.
    package let unixGroupID: UInt32?
    /// The number of items, when the caller may list the directory.
    package let itemCount: Int?
    /// Whether this process can read and write the group.
    package let usable: Bool
    /// Why the group's key could not be read, when that is neither its absence nor the kernel keeping
    /// a non-member out: damage (a member can write a `group.key` that does not open), an unsafe file.
    package var keyFailure: StoreError? = nil
}

extension VaultStore {
    /// What this process can learn of `group`; nil when the vault has no such group.
    package func summary(of group: GroupName) -> GroupSummary? {
        let status: FileStatus
        do {
            status = try groupsDirectory.statusAt(group.rawValue)
        } catch {
            // Absent only when the kernel says so: a `groups/` this process may not search is no answer.
            if error == .noSuchFileOrDirectory { return nil }
            return GroupSummary(name: group, isShared: nil, unixGroupID: nil, itemCount: nil, usable: false)
        }
        guard status.kind == .directory else { return nil }
        let shared = status.permissions.rawValue == FilePermissions.sharedDirectory.rawValue
        var keys: GroupKeys?
        var keyFailure: StoreError?
        do {
            keys = try self.keys(for: group)
        } catch {
            if ![.notAMember, .groupNotFound, .permissionDenied].contains(error.code) { keyFailure = error }
        }
        let count = try? itemIDs(in: group, sorted: false).count
        var summary = GroupSummary(
            name: group, isShared: keys.map(\.isShared) ?? (shared ? true : nil),
            unixGroupID: shared ? status.groupID : nil, itemCount: count, usable: keys.map { !$0.isAbsent } ?? false)
        summary.keyFailure = keyFailure
        return summary
    }
}
