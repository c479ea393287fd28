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
                ("Modified", .uint64(Self.seconds(modified))),
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

    /// `date` in whole seconds since 1970 as the specification's `t`: 0 before 1970 or when unknown, and
    /// held at the end of `UInt64` for a date beyond it (a restored backup's record can hold any date).
    static func seconds(_ date: Date?) -> UInt64 {
        guard let seconds = date?.timeIntervalSince1970, seconds > 0 else { return 0 }
        return UInt64(exactly: seconds.rounded(.down)) ?? (seconds.isNaN ? 0 : .max)
    }

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

    /// The introspection data of `object`: its interfaces and its children.
    func introspection(of object: Object) -> String {
        switch object {
        case .service:
            return SecretServiceIntrospection.node(
                interfaces: [SecretServiceIntrospection.service], children: ["collection", "aliases"])
        case .collection(let group):
            let children = ((try? items(in: group, matching: [:])) ?? []).map {
                String(itemPath($0.reference, in: group).split(separator: "/").last ?? "")
            }
            return SecretServiceIntrospection.node(
                interfaces: [SecretServiceIntrospection.collection], children: children)
        case .item: return SecretServiceIntrospection.node(interfaces: [SecretServiceIntrospection.item], children: [])
        case .session:
            return SecretServiceIntrospection.node(interfaces: [SecretServiceIntrospection.session], children: [])
        case .prompt:
            return SecretServiceIntrospection.node(interfaces: [SecretServiceIntrospection.prompt], children: [])
        }
    }

    /// The introspection data of a node between the objects (`/org`, …, `collection`, `aliases`); nil
    /// for any other path.
    func introspection(ofNode path: String) -> String? {
        let children: [String]
        switch path {
        case "/": children = ["org"]
        case "/org": children = ["freedesktop"]
        case "/org/freedesktop": children = ["secrets"]
        case "/org/freedesktop/secrets/collection":
            children = allGroups.map { Self.pathElement($0.rawValue) }
        case "/org/freedesktop/secrets/aliases": children = ["default"]
        default: return nil
        }
        return SecretServiceIntrospection.node(interfaces: [], children: children)
    }
}
