import FoundationEssentials
import Vault

/// A collection's label: its group's name, unless a client set another, which is kept in the group as
/// an invisible generic password (service `org.freedesktop.Secret.Collection`, account `label`, the
/// label as its data) that no client sees as an item. `CreateCollection` writes one with the
/// description `madeByClient`, which says that a client may delete the group; a label set on another
/// collection never carries it.
extension SecretService {
    static let labelService = "org.freedesktop.Secret.Collection"
    static let labelAccount = "label"
    static let madeByClient = "made by CreateCollection"

    /// Whether vault item `attributes` is a collection's label, not an item.
    static func isCollectionLabel(_ attributes: ItemAttributes) -> Bool {
        attributes.isInvisible == true && attributes.service == labelService && attributes.account == labelAccount
            && attributes.creator == SecretItemMapping.creator
    }

    func collectionLabel(_ group: AccessGroup) -> String {
        guard let key = try? ItemKey(service: Self.labelService, account: Self.labelAccount, group: group),
            let data = try? vault.data(for: key)
        else { return group.rawValue }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `group` was made through the Secret Service (`CreateCollection`).
    func isMadeBySecretService(_ group: AccessGroup) throws(ServiceError) -> Bool {
        var attributes = ItemAttributes(service: Self.labelService, account: Self.labelAccount)
        attributes.accessGroup = group
        do {
            let found = try vault.copyMatching(Query(itemClass: .genericPassword, attributes: attributes))
            return found.first.map {
                Self.isCollectionLabel($0.attributes) && $0.attributes.itemDescription == Self.madeByClient
            } ?? false
        } catch {
            if error.status == .itemNotFound { return false }
            throw ServiceError(error, "cannot read collection \(group)")
        }
    }

    func setCollectionLabel(_ label: String, of group: AccessGroup, madeByClient: Bool = false) throws(ServiceError) {
        do {
            let key = try ItemKey(service: Self.labelService, account: Self.labelAccount, group: group)
            var attributes = ItemAttributes(service: Self.labelService, account: Self.labelAccount)
            attributes.accessGroup = group
            if try vault.contains(key) {
                _ = try vault.update(
                    Query(itemClass: .genericPassword, attributes: attributes),
                    with: ItemChanges(attributes: ItemAttributes(), data: Data(label.utf8)))
            } else {
                attributes.isInvisible = true
                attributes.creator = SecretItemMapping.creator
                if madeByClient { attributes.itemDescription = Self.madeByClient }
                _ = try vault.add(.genericPassword, attributes: attributes, data: Data(label.utf8))
            }
        } catch {
            throw ServiceError(error, "cannot set the label of collection \(group)")
        }
    }

    /// A group name for a new collection labelled `label`: its characters outside `[A-Za-z0-9._-]` as
    /// `-`, and a number after it while a group has the name.
    func groupName(forLabel label: String) -> AccessGroup? {
        var name = String(
            label.unicodeScalars.map { scalar in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)
                        || "._-".unicodeScalars.contains(scalar))
                    ? Character(scalar) : "-"
            })
        while name.hasPrefix(".") { name.removeFirst() }
        if name.isEmpty { name = "collection" }
        name = String(name.prefix(190))
        var candidate = name
        var number = 1
        while let group = try? AccessGroup(candidate), allGroups.contains(group) {
            number += 1
            candidate = "\(name)-\(number)"
        }
        return try? AccessGroup(candidate)
    }
}
