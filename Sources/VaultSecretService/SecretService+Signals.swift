import Vault
import VaultDBus

/// The signals of a change: the Secret Service's own (`ItemCreated`, `CollectionChanged`, …) and
/// `org.freedesktop.DBus.Properties.PropertiesChanged`, with the properties that changed named as
/// invalidated (a client that wants the new value asks).
extension SecretService {
    enum Change {
        case itemCreated(AccessGroup, item: String)
        case itemChanged(AccessGroup, item: String, properties: [String])
        case itemDeleted(AccessGroup, item: String)
        case collectionCreated(AccessGroup)
        case collectionChanged(AccessGroup, properties: [String])
        case collectionDeleted(AccessGroup)
    }

    func announce(_ change: Change) {
        switch change {
        case .itemCreated(let group, let item):
            collectionSignal("ItemCreated", group, item)
            itemsChanged(group)
        case .itemDeleted(let group, let item):
            collectionSignal("ItemDeleted", group, item)
            itemsChanged(group)
        case .itemChanged(let group, let item, let properties):
            collectionSignal("ItemChanged", group, item)
            propertiesChanged(item, interface: "Item", properties)
            serviceSignal("CollectionChanged", group)
        case .collectionCreated(let group):
            serviceSignal("CollectionCreated", group)
            propertiesChanged(Self.servicePath, interface: "Service", ["Collections"])
        case .collectionChanged(let group, let properties):
            serviceSignal("CollectionChanged", group)
            propertiesChanged(collectionPath(group), interface: "Collection", properties)
        case .collectionDeleted(let group):
            serviceSignal("CollectionDeleted", group)
            propertiesChanged(Self.servicePath, interface: "Service", ["Collections"])
        }
    }

    private func collectionSignal(_ member: String, _ group: AccessGroup, _ item: String) {
        bus.emitSignal(
            path: collectionPath(group), interface: Self.secretInterface + "Collection", member: member,
            [.objectPath(item)])
    }

    private func serviceSignal(_ member: String, _ group: AccessGroup) {
        bus.emitSignal(
            path: Self.servicePath, interface: Self.secretInterface + "Service", member: member,
            [.objectPath(collectionPath(group))])
    }

    private func itemsChanged(_ group: AccessGroup) {
        propertiesChanged(collectionPath(group), interface: "Collection", ["Items", "Modified"])
        serviceSignal("CollectionChanged", group)
    }

    private func propertiesChanged(_ path: String, interface: String, _ invalidated: [String]) {
        bus.emitSignal(
            path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
            [
                .string(Self.secretInterface + interface), .properties([]),
                .array(element: "s", invalidated.map { .string($0) }),
            ])
    }
}
