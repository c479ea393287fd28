import FoundationEssentials
import Vault
import VaultDBus

/// `org.freedesktop.DBus.Properties` and `Introspectable` of the Secret Service's objects.
extension SecretService {
    /// The Secret Service interface of `object` (`Service`, `Collection`, …).
    func secretInterface(of object: Object) -> String {
        switch object {
        case .service: Self.secretInterface + "Service"
        case .collection: Self.secretInterface + "Collection"
        case .item: Self.secretInterface + "Item"
        case .session: Self.secretInterface + "Session"
        case .prompt: Self.secretInterface + "Prompt"
        }
    }

    /// The properties of `object`'s `interface` (none of another interface's).
    func properties(of object: Object, interface: String) throws(ServiceError) -> [(String, DBusValue)] {
        guard interface.isEmpty || interface == secretInterface(of: object) else { return [] }
        switch object {
        case .service:
            return [("Collections", .objectPaths(allGroups.map(collectionPath)))]
        case .collection(let group):
            let items = try items(in: group, matching: [:])
            let modified = items.compactMap(\.attributes.modificationDate).max()
            return [
                ("Items", .objectPaths(items.map { itemPath($0.reference, in: group) })),
                ("Label", .string(collectionLabel(group))),
                ("Locked", .boolean(isLocked)),
                ("Created", .uint64(0)),
                ("Modified", .uint64(modified.map { UInt64(max(0, $0.timeIntervalSince1970)) } ?? 0)),
            ]
        case .item(let group, let reference):
            let found = try item(reference, in: group)
            let attributes = found.attributes
            return [
                ("Locked", .boolean(isLocked)),
                ("Attributes", .stringDictionary(SecretItemMapping.secretServiceAttributes(attributes))),
                ("Label", .string(SecretItemMapping.label(attributes))),
                ("Type", .string(SecretItemMapping.secretServiceAttributes(attributes)["xdg:schema"] ?? "")),
                ("Created", .uint64(Self.seconds(attributes.creationDate))),
                ("Modified", .uint64(Self.seconds(attributes.modificationDate))),
            ]
        case .session, .prompt:
            return []
        }
    }

    static func seconds(_ date: Date?) -> UInt64 { date.map { UInt64(max(0, $0.timeIntervalSince1970)) } ?? 0 }

    func property(_ name: String, of object: Object, interface: String) throws(ServiceError) -> DBusValue {
        guard let value = try properties(of: object, interface: interface).first(where: { $0.0 == name })?.1 else {
            throw ServiceError(.unknownProperty, "no property \(name) of \(interface)")
        }
        return value
    }

    func setProperty(_ name: String, of object: Object, interface: String, to value: DBusValue) throws(ServiceError) {
        if case .collection(let group) = object, name == "Label" {
            guard let label = value.stringValue else { throw ServiceError(.invalidArgs, "a label is a string") }
            try setCollectionLabel(label, of: group)
            announce(.collectionChanged(group, properties: ["Label"]))
            return
        }
        guard case .item(let group, let reference) = object else {
            throw ServiceError(.propertyReadOnly, "property \(name) of \(interface) cannot be set")
        }
        let found = try item(reference, in: group)
        switch name {
        case "Label":
            guard let label = value.stringValue else { throw ServiceError(.invalidArgs, "a label is a string") }
            var changes = ItemChanges(attributes: ItemAttributes())
            changes.attributes.label = label
            try change(reference, in: group, changes, properties: ["Label"])
        case "Attributes":
            guard let attributes = value.stringDictionaryValue else {
                throw ServiceError(.invalidArgs, "attributes are a{ss}")
            }
            // New attributes are a new name for the vault item: its service and account change with them.
            let renamed = try SecretItemMapping.vaultAttributes(
                attributes, label: SecretItemMapping.label(found.attributes), group: group)
            var changes = ItemChanges(attributes: ItemAttributes(service: renamed.service, account: renamed.account))
            changes.attributes.creator = SecretItemMapping.creator
            try change(reference, in: group, changes, properties: ["Attributes"])
        default:
            throw ServiceError(.propertyReadOnly, "property \(name) of \(interface) cannot be set")
        }
    }

    /// Enough introspection data for a browser of the bus: each object's interfaces and children.
    func introspection(of object: Object) -> String {
        var interfaces = ["org.freedesktop.DBus.Properties", "org.freedesktop.DBus.Introspectable"]
        var children: [String] = []
        switch object {
        case .service:
            interfaces.append("org.freedesktop.Secret.Service")
            children = ["collection", "aliases", "session", "prompt"]
        case .collection(let group):
            interfaces.append("org.freedesktop.Secret.Collection")
            children = ((try? items(in: group, matching: [:])) ?? []).map {
                String(itemPath($0.reference, in: group).split(separator: "/").last ?? "")
            }
        case .item: interfaces.append("org.freedesktop.Secret.Item")
        case .session: interfaces.append("org.freedesktop.Secret.Session")
        case .prompt: interfaces.append("org.freedesktop.Secret.Prompt")
        }
        return "<!DOCTYPE node PUBLIC \"-//freedesktop//DTD D-BUS Object Introspection 1.0//EN\" "
            + "\"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd\">\n<node>\n"
            + interfaces.map { "  <interface name=\"\($0)\"/>\n" }.joined()
            + children.map { "  <node name=\"\($0)\"/>\n" }.joined() + "</node>\n"
    }
}
