import Foundation
import Vault
import VaultTestSupport

/// Runs `body` with a root-owned vault in a traversable temp directory with groups `db`
/// (shared with `groups[0]`) and `web` (shared with `groups[1]`); `users[0]` is in `groups[0]`,
/// `users[1]` in `groups[1]`, `users[2]` in neither. `body` gets the vault's path and copies of
/// `executables` (in order) that the throwaway users can run; accounts, vault and copies are removed
/// however `body` ends. Needs `canRunAsOtherUsers`.
func withSharedGroupsVault(
    copying executables: [String],
    _ body: (_ vault: String, _ copies: [String], _ users: [ThrowawayUser], _ groups: [ThrowawayGroup]) throws ->
        Void
) throws {
    try withThrowawayAccounts(users: 3, groups: 2) { users, groups in
        try addMember(users[0], to: groups[0])
        try addMember(users[1], to: groups[1])
        try withTemporaryVault("shared") { temporary in
            try makeTraversable(temporary.root)
            let owner = try Vault.create(
                at: temporary.path, client: try Client(applicationIdentifier: "owner"))
            try owner.createGroup(try AccessGroup("db"), unixGroup: groups[0].gid)
            try owner.createGroup(try AccessGroup("web"), unixGroup: groups[1].gid)
            try withExecutablesForOtherUsers(executables[...]) { copies in
                try body(temporary.path, copies, users, groups)
            }
        }
    }
}

/// `withExecutableForOtherUsers` for each of `executables`, nested; `body` gets the copies in order.
private func withExecutablesForOtherUsers(
    _ executables: ArraySlice<String>, copied: [String] = [], _ body: ([String]) throws -> Void
) throws {
    guard let first = executables.first else { return try body(copied) }
    try withExecutableForOtherUsers(first) { copy in
        try withExecutablesForOtherUsers(executables.dropFirst(), copied: copied + [copy], body)
    }
}

/// The item (service, account) of access group `group`, as the vault's owner reads it.
func ownerReads(_ vault: String, group: String, service: String, account: String) throws -> Data? {
    let owner = try Vault.open(at: vault, client: try Client(applicationIdentifier: "owner", accessGroups: [group]))
    return try owner.data(for: try ItemKey(service: service, account: account, group: try AccessGroup(group)))
}
