import FoundationEssentials
import Vault
import VaultCrypto
import VaultDBus

/// Collections and items: searches (by the items' attributes, never reading secrets), creation,
/// secrets in and out of a session, deletion.
extension SecretService {
    struct FoundItem {
        let reference: PersistentReference
        let attributes: ItemAttributes
        let secretServiceAttributes: [String: String]
    }

    /// The items of `group` whose Secret Service attributes include `wanted`.
    func items(in group: AccessGroup, matching wanted: [String: String]) throws(ServiceError) -> [FoundItem] {
        try indexedItems(in: group).filter { SecretItemMapping.matches(wanted, $0.secretServiceAttributes) }
    }

    /// Every item of `group`, with its attributes (never its secret): from the index while the group's
    /// directory has not changed since it was read (`DirectoryWatch`), else read again. A fleet group,
    /// whose items change in etcd, is read each time (the read brings its cache up to date).
    func indexedItems(in group: AccessGroup) throws(ServiceError) -> [FoundItem] {
        let path = vault.path(of: group)
        let indexable = !Vault.isFleetGroup(vaultPath: vault.path, group: group)
        if indexable, let watch, let known = index[group], !watch.changed(path) { return known }
        if indexable, let watch {
            // Watched before the read: a change during it makes the next search read again.
            if (try? watch.watch(path)) != nil {
                _ = watch.changed(path)
            }
        }
        let found: [MatchedItem]
        do {
            found = try vault.copyMatching(
                Query(itemClass: .genericPassword, attributes: groupAttributes(group), limit: .all),
                returning: [.attributes, .persistentReference])
        } catch {
            guard error.status == .itemNotFound else { throw ServiceError(error, "cannot search collection \(group)") }
            found = []
        }
        let items = found.filter { !Self.isCollectionLabel($0.attributes) }.map { match in
            FoundItem(
                reference: match.persistentReference, attributes: match.attributes,
                secretServiceAttributes: SecretItemMapping.secretServiceAttributes(match.attributes))
        }
        index[group] = indexable && watch != nil ? items : nil
        return items
    }

    /// The item `reference` names, with its secret when `withData`.
    func item(_ reference: PersistentReference, in group: AccessGroup, withData: Bool = false)
        throws(ServiceError) -> MatchedItem
    {
        do {
            let found = try vault.copyMatching(
                Query(itemClass: .genericPassword, attributes: groupAttributes(group), persistentReference: reference),
                returning: withData ? [.attributes, .persistentReference, .data] : [.attributes, .persistentReference])
            guard let item = found.first else { throw ServiceError(.noSuchObject, "the item is gone") }
            return item
        } catch let error as VaultError {
            throw ServiceError(error, "item \(itemPath(reference, in: group))")
        } catch {
            throw error as? ServiceError ?? ServiceError(.failed, "\(error)")
        }
    }

    func collectionMethod(_ member: String, _ arguments: [DBusValue], group: AccessGroup)
        throws(ServiceError) -> [DBusValue]
    {
        switch member {
        case "SearchItems":
            guard arguments.count == 1, let wanted = arguments[0].stringDictionaryValue else { throw invalid(member) }
            return [.objectPaths(try items(in: group, matching: wanted).map { itemPath($0.reference, in: group) })]
        case "CreateItem":
            guard arguments.count == 3, let properties = arguments[0].propertiesValue,
                case .boolean(let replace) = arguments[2]
            else { throw invalid(member) }
            let attributes =
                properties["org.freedesktop.Secret.Item.Attributes"]?.unwrapped.stringDictionaryValue ?? [:]
            let label = properties["org.freedesktop.Secret.Item.Label"]?.unwrapped.stringValue ?? ""
            let secret = try openSecret(arguments[1])
            let path = try createItem(
                in: group, attributes: attributes, label: label, secret: secret, replace: replace)
            return [.objectPath(path), .objectPath("/")]
        case "Delete":
            // Every group of the vault is a collection, but only one made through the Secret Service is a
            // client's to delete: the others hold what other programs (or machines) keep there.
            guard group != defaultGroup else {
                throw ServiceError(.accessDenied, "the default collection (group \(group)) cannot be deleted")
            }
            guard try isMadeBySecretService(group) else {
                throw ServiceError(
                    .accessDenied,
                    "collection \(group) is the vault's group \(group), which a client of the Secret Service did "
                        + "not make; its owner removes it with `vault group rm \(group) --force`")
            }
            do {
                try vault.removeGroup(group, force: true)
            } catch {
                throw ServiceError(error, "cannot delete collection \(group)")
            }
            groups.removeAll { $0 == group }
            announce(.collectionDeleted(group))
            return [.objectPath("/")]
        default:
            throw unknown(member, collectionPath(group))
        }
    }

    /// Stores an item of `attributes`: over the first of those attributes with `replace`, else as a new
    /// one (the next copy number: a vault item's name is unique).
    func createItem(
        in group: AccessGroup, attributes: [String: String], label: String, secret: Secret, replace: Bool
    ) throws(ServiceError) -> String {
        do {
            var copy = 1
            var vaultAttributes = try SecretItemMapping.vaultAttributes(
                attributes, label: label, group: group, contentType: secret.contentType)
            var existing = try vault.contains(vaultAttributes.key(in: group))
            while existing && !replace {
                copy += 1
                vaultAttributes = try SecretItemMapping.vaultAttributes(
                    attributes, label: label, group: group, copy: copy, contentType: secret.contentType)
                existing = try vault.contains(vaultAttributes.key(in: group))
            }
            let reference: PersistentReference
            if existing {
                var changes = ItemChanges(attributes: ItemAttributes(), data: Data(secret.bytes))
                changes.attributes.label = label
                changes.attributes.itemDescription = secret.contentType
                let query = Query(
                    itemClass: .genericPassword, attributes: vaultAttributes.primaryKeyOnly(), limit: .one)
                try vault.update(query, with: changes)
                // An update keeps the item's persistent reference.
                reference = try vault.copyMatching(query, returning: [.persistentReference])[0].persistentReference
            } else {
                reference = try vault.add(.genericPassword, attributes: vaultAttributes, data: Data(secret.bytes))
                    .persistentReference
            }
            let path = itemPath(reference, in: group)
            announce(
                existing
                    ? .itemChanged(group, item: path, properties: ["Label", "Modified"])
                    : .itemCreated(group, item: path))
            return path
        } catch let error as VaultError {
            throw ServiceError(error, "cannot store the item in collection \(group)")
        } catch {
            throw error as? ServiceError ?? ServiceError(.failed, "\(error)")
        }
    }

    func itemMethod(_ member: String, _ arguments: [DBusValue], group: AccessGroup, _ reference: PersistentReference)
        throws(ServiceError) -> [DBusValue]
    {
        switch member {
        case "GetSecret":
            guard arguments.count == 1, let sessionPath = arguments[0].stringValue else { throw invalid(member) }
            let session = try requireSession(sessionPath)
            return [try secret(of: reference, in: group, session: session, sessionPath: sessionPath)]
        case "SetSecret":
            guard arguments.count == 1 else { throw invalid(member) }
            let secret = try openSecret(arguments[0])
            var changes = ItemChanges(attributes: ItemAttributes(), data: Data(secret.bytes))
            changes.attributes.itemDescription = secret.contentType
            try change(reference, in: group, changes, properties: [])
            return []
        case "Delete":
            let path = itemPath(reference, in: group)
            do {
                _ = try vault.delete(
                    Query(
                        itemClass: .genericPassword, attributes: groupAttributes(group), persistentReference: reference)
                )
            } catch {
                throw ServiceError(error, "cannot delete item \(path)")
            }
            announce(.itemDeleted(group, item: path))
            return [.objectPath("/")]
        default:
            throw unknown(member, itemPath(reference, in: group))
        }
    }

    /// Changes the item `reference` names; `properties` are the Secret Service properties that change.
    func change(
        _ reference: PersistentReference, in group: AccessGroup, _ changes: ItemChanges, properties: [String]
    ) throws(ServiceError) {
        let path = itemPath(reference, in: group)
        do {
            _ = try vault.update(
                Query(itemClass: .genericPassword, attributes: groupAttributes(group), persistentReference: reference),
                with: changes)
        } catch {
            throw ServiceError(error, "cannot change item \(path)")
        }
        announce(.itemChanged(group, item: path, properties: properties + ["Modified"]))
    }

    /// The secret of an item as the session hands it out: `(oayays)`.
    func secret(of reference: PersistentReference, in group: AccessGroup, session: Session, sessionPath: String)
        throws(ServiceError) -> DBusValue
    {
        let found = try item(reference, in: group, withData: true)
        var bytes = [UInt8](found.data ?? Data())
        defer { bytes.wipe() }
        let contentType = SecretItemMapping.contentType(found.attributes)
        guard let crypto = session.crypto else {
            return .structure([.objectPath(sessionPath), .bytes([]), .bytes(bytes), .string(contentType)])
        }
        do {
            let (iv, ciphertext) = try crypto.encrypt(bytes)
            return .structure([.objectPath(sessionPath), .bytes(iv), .bytes(ciphertext), .string(contentType)])
        } catch {
            throw ServiceError(.failed, "cannot encrypt the secret: \(error.message)")
        }
    }

    /// A secret a client sent, decrypted, and its content type; its bytes are wiped when it goes (the
    /// copies handed to the vault are the vault's).
    final class Secret {
        private(set) var bytes: [UInt8]
        let contentType: String

        init(bytes: [UInt8], contentType: String) {
            self.bytes = bytes
            self.contentType = contentType
        }

        deinit { bytes.wipe() }
    }

    /// The secret a client sent: `(oayays)`, decrypted under its session's key.
    func openSecret(_ value: DBusValue) throws(ServiceError) -> Secret {
        guard case .structure(let fields) = value, fields.count == 4, let sessionPath = fields[0].stringValue,
            let parameters = fields[1].byteArray, let secret = fields[2].byteArray,
            let contentType = fields[3].stringValue
        else { throw ServiceError(.invalidArgs, "a secret is (oayays): session, parameters, value, content type") }
        let session = try requireSession(sessionPath)
        let type = contentType.isEmpty ? SecretItemMapping.defaultContentType : contentType
        guard let crypto = session.crypto else { return Secret(bytes: secret, contentType: type) }
        do {
            return Secret(bytes: try crypto.decrypt(secret, iv: parameters), contentType: type)
        } catch {
            throw ServiceError(.invalidArgs, "cannot read the secret: \(error.message)")
        }
    }
}

extension ItemAttributes {
    /// The key of a generic password of these service and account in `group`.
    fileprivate func key(in group: AccessGroup) throws(VaultError) -> ItemKey {
        try ItemKey(service: service ?? "", account: account ?? "", group: group)
    }

    /// Only what names the item (its group, service and account).
    fileprivate func primaryKeyOnly() -> ItemAttributes {
        var attributes = ItemAttributes(service: service, account: account)
        attributes.accessGroup = accessGroup
        return attributes
    }
}
