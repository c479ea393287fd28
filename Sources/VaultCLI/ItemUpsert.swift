import FoundationEssentials
import Vault
import VaultSystem

/// Add-or-update without a gap, as `vault put` and the credential helpers store: the item is looked
/// up, then updated in place (keeping its creation date and persistent reference) or added. Each step
/// is atomic under the vault's lock, and a race lost to another process (the item appeared or vanished
/// in between) is retried, so readers see the old secret or the new one, never none. An item whose file
/// fails authentication has lost its secret: the new one takes its place, as a new item (new persistent
/// reference and creation date); anything else that cannot be read (an unsafe or unreadable file, a
/// newer format) may be sound and stops the store.
enum ItemUpsert {
    /// Stores `secret` as the item `name` (in `group`, else the client's default group) with
    /// `attributes`, which hold `name`'s primary key; label, comment and description are also set on
    /// an update.
    /// Returns the damaged files it removed on the way.
    @discardableResult
    static func store(
        _ secret: Data, as name: ItemName, group: AccessGroup?, attributes: ItemAttributes, in vault: Vault
    ) throws(VaultError) -> [ItemProblem] {
        var key = attributes
        key.accessGroup = group
        return try store(secret, itemClass: name.itemClass, attributes: key, in: vault)
    }

    /// Stores `secret` as the item of `itemClass` whose primary key `attributes` holds (every key
    /// attribute given, "" or 0 for the empty ones, and the group or nil for the default one).
    @discardableResult
    static func store(_ secret: Data, itemClass: ItemClass, attributes: ItemAttributes, in vault: Vault)
        throws(VaultError) -> [ItemProblem]
    {
        var changes = ItemChanges(data: secret)
        changes.attributes.label = attributes.label
        changes.attributes.comment = attributes.comment
        changes.attributes.itemDescription = attributes.itemDescription
        var lookup = ItemAttributes()
        lookup.accessGroup = attributes.accessGroup
        lookup.account = attributes.account ?? ""
        switch itemClass {
        case .genericPassword:
            lookup.service = attributes.service ?? ""
        case .internetPassword:
            lookup.server = attributes.server ?? ""
            lookup.securityDomain = attributes.securityDomain ?? ""
            lookup.protocol = attributes.protocol ?? ""
            lookup.authenticationType = attributes.authenticationType ?? ""
            lookup.port = attributes.port ?? 0
            lookup.path = attributes.path ?? ""
        }
        var removed: [ItemProblem] = []
        for _ in 0..<8 {
            let found = try vault.search(Query(itemClass: itemClass, attributes: lookup), returning: [.attributes])
            let existing = found.items.first
            // A group that is not there (a fleet group removed from the fleet) is no damage: the add below
            // says why, with its cause.
            let groupMissing = found.problems.allSatisfy { $0.status == .itemNotFound }
            if existing == nil, !groupMissing, let problem = found.problems.first {
                guard found.problems.allSatisfy(\.failedAuthentication) else {
                    let first = found.problems.first { !$0.failedAuthentication } ?? problem
                    throw VaultError(first.status, "\(first.path): \(first.reason)")
                }
                removed += try vault.removeDamaged(found.problems)
                continue
            }
            do {
                if let existing {
                    var inGroup = lookup
                    inGroup.accessGroup = existing.attributes.accessGroup
                    try vault.update(Query(itemClass: itemClass, attributes: inGroup), with: changes)
                } else {
                    try vault.add(itemClass, attributes: attributes, data: secret)
                }
                return removed
            } catch  where (error.status == .itemNotFound && !error.isMissingGroup) || error.status == .duplicateItem {
                // The item appeared or went meanwhile; a group that is not there is no race.
                continue
            }
        }
        throw VaultError(.io, "other processes kept changing the item; try again")
    }
}
