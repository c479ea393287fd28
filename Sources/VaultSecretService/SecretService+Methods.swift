import FoundationEssentials
import Vault
import VaultDBus

/// The methods of the Secret Service's objects: `Service`, `Collection`, `Item`, `Session`, `Prompt`.
extension SecretService {
    func dispatch(_ message: DBusReceivedMessage, _ arguments: [DBusValue]) throws(ServiceError) -> [DBusValue] {
        if message.member == "Introspect", let node = introspection(ofNode: message.path) { return [.string(node)] }
        let object = try resolve(message.path)
        let member = message.member
        switch (message.interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"): return [.string(introspection(of: object))]
        case ("org.freedesktop.DBus.Peer", "Ping"): return []
        case ("org.freedesktop.DBus.Properties", "Get"):
            guard arguments.count == 2, let interface = arguments[0].stringValue, let name = arguments[1].stringValue
            else { throw invalid(member) }
            return [.variant(try property(name, of: object, interface: interface))]
        case ("org.freedesktop.DBus.Properties", "GetAll"):
            guard arguments.count == 1, let interface = arguments[0].stringValue else { throw invalid(member) }
            return [.properties(try properties(of: object, interface: interface))]
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard arguments.count == 3, let interface = arguments[0].stringValue, let name = arguments[1].stringValue
            else { throw invalid(member) }
            try setProperty(name, of: object, interface: interface, to: arguments[2].unwrapped)
            return []
        default: break
        }
        switch object {
        case .service: return try serviceMethod(member, arguments, sender: message.sender)
        case .collection(let group): return try collectionMethod(member, arguments, group: group)
        case .item(let group, let reference): return try itemMethod(member, arguments, group: group, reference)
        case .session(let path):
            guard member == "Close" else { throw unknown(member, message.path) }
            _ = try requireSession(path)
            sessions.removeValue(forKey: path)
            return []
        case .prompt(let path): return try promptMethod(member, path: path)
        }
    }

    /// The arguments each method takes, for the message of a call that gave others.
    static let signatures = [
        "OpenSession": "sv", "CreateCollection": "a{sv}s", "SearchItems": "a{ss}", "Unlock": "ao", "Lock": "ao",
        "GetSecrets": "aoo", "ReadAlias": "s", "SetAlias": "so", "CreateItem": "a{sv}(oayays)b", "GetSecret": "o",
        "SetSecret": "(oayays)", "Get": "ss", "GetAll": "s", "Set": "ssv",
    ]

    func invalid(_ member: String) -> ServiceError {
        ServiceError(
            .invalidArgs,
            "wrong arguments for \(member): it takes (\(Self.signatures[member] ?? "")), as the "
                + "Secret Service API 0.2 says")
    }

    func unknown(_ member: String, _ path: String) -> ServiceError {
        ServiceError(.unknownMethod, "\(path) has no method \(member)")
    }

    // MARK: Service

    func serviceMethod(_ member: String, _ arguments: [DBusValue], sender: String) throws(ServiceError) -> [DBusValue] {
        switch member {
        case "OpenSession":
            guard arguments.count == 2, let algorithm = arguments[0].stringValue else { throw invalid(member) }
            let input = arguments[1].unwrapped
            let path = newObjectPath(Self.sessionPrefix)
            switch algorithm {
            case "plain":
                sessions[path] = Session(owner: sender, crypto: nil)
                return [.variant(.string("")), .objectPath(path)]
            case "dh-ietf1024-sha256-aes128-cbc-pkcs7":
                guard let clientKey = input.byteArray else { throw invalid(member) }
                do {
                    let (crypto, publicKey) = try SessionCrypto.agree(clientPublicKey: clientKey)
                    sessions[path] = Session(owner: sender, crypto: crypto)
                    return [.variant(.bytes(publicKey)), .objectPath(path)]
                } catch {
                    throw ServiceError(.invalidArgs, "cannot open a session: \(error.message)")
                }
            default:
                throw ServiceError(
                    .notSupported,
                    "algorithm \(algorithm) is not supported: plain and dh-ietf1024-sha256-aes128-cbc-pkcs7 are")
            }
        case "CreateCollection":
            guard arguments.count == 2, let properties = arguments[0].propertiesValue,
                let alias = arguments[1].stringValue
            else { throw invalid(member) }
            let group = try createCollection(
                label: properties["org.freedesktop.Secret.Collection.Label"]?.unwrapped.stringValue ?? "", alias: alias)
            return [.objectPath(collectionPath(group)), .objectPath("/")]
        case "SearchItems":
            guard arguments.count == 1, let wanted = arguments[0].stringDictionaryValue else { throw invalid(member) }
            // A group that cannot be read (a fleet group with etcd out of reach, a damaged one) hides
            // nothing of the others; only when none can be read is the search an error.
            var unlocked: [String] = []
            var failure: ServiceError?
            var searched = 0
            for group in allGroups {
                do {
                    unlocked += try items(in: group, matching: wanted).map { itemPath($0.reference, in: group) }
                    searched += 1
                } catch {
                    if error.name == .isLocked { throw error }
                    Self.printError(error.message)
                    failure = failure ?? error
                }
            }
            if searched == 0, let failure { throw failure }
            return [.objectPaths(unlocked), .objectPaths([])]
        case "Unlock":
            guard arguments.count == 1, let paths = arguments[0].objectPathArray else { throw invalid(member) }
            return try unlock(paths, sender: sender)
        case "Lock":
            // The vault locks with `vault lock` (it forgets the unlock cache); a client cannot lock it.
            guard arguments.count == 1, arguments[0].objectPathArray != nil else { throw invalid(member) }
            return [.objectPaths([]), .objectPath("/")]
        case "GetSecrets":
            guard arguments.count == 2, let paths = arguments[0].objectPathArray,
                let sessionPath = arguments[1].stringValue
            else { throw invalid(member) }
            let session = try requireSession(sessionPath)
            var entries: [DBusValue] = []
            for path in paths {
                guard case .item(let group, let reference)? = try? resolve(path) else { continue }
                // An item that cannot be read (gone meanwhile, damaged, a fleet group out of reach) is left
                // out, its reason on standard error; a locked vault is an error (`handle` opens it again).
                do {
                    let secret = try secret(of: reference, in: group, session: session, sessionPath: sessionPath)
                    entries.append(.dictionaryEntry(.objectPath(path), secret))
                } catch  where error.name != .isLocked {
                    if error.name != .noSuchObject { Self.printError(error.message) }
                    continue
                }
            }
            return [.array(element: "{o(oayays)}", entries)]
        case "ReadAlias":
            guard arguments.count == 1, let name = arguments[0].stringValue else { throw invalid(member) }
            return [.objectPath(name == "default" ? collectionPath(defaultGroup) : "/")]
        case "SetAlias":
            guard arguments.count == 2, let name = arguments[0].stringValue, let path = arguments[1].stringValue else {
                throw invalid(member)
            }
            guard name == "default" else {
                throw ServiceError(.notSupported, "only the alias default is kept (asked for \(name))")
            }
            // Removing the alias (path "/") keeps it where it is: there is always a default collection.
            if path == "/" { return [] }
            guard case .collection(let group) = try resolve(path) else {
                throw ServiceError(.noSuchObject, "no collection at \(path)")
            }
            defaultGroup = group
            return []
        default:
            throw unknown(member, Self.servicePath)
        }
    }

    /// The session at `path`, which must be the calling client's.
    func requireSession(_ path: String) throws(ServiceError) -> Session {
        guard let session = sessions[path], session.owner == currentSender else {
            throw ServiceError(.noSession, "no session of this client at \(path); open one with OpenSession")
        }
        return session
    }

    /// Unlocks what the vault can: with its key at hand (a plain key, or `vault unlock`'s cache) every
    /// object is unlocked already; otherwise the prompt completes as dismissed (no prompt can be shown).
    func unlock(_ paths: [String], sender: String) throws(ServiceError) -> [DBusValue] {
        guard isLocked else { return [.objectPaths(paths), .objectPath("/")] }
        let path = newObjectPath(Self.promptPrefix)
        prompts[path] = Prompt(
            owner: sender, result: nil,
            message: "the vault at \(vault.path) is locked: run `vault unlock` in a terminal, then try again")
        return [.objectPaths([]), .objectPath(path)]
    }

    func promptMethod(_ member: String, path: String) throws(ServiceError) -> [DBusValue] {
        guard ["Prompt", "Dismiss"].contains(member) else { throw unknown(member, path) }
        guard let prompt = prompts[path], prompt.owner == currentSender else {
            throw ServiceError(.noSuchObject, "no prompt of this client at \(path)")
        }
        prompts.removeValue(forKey: path)
        switch member {
        case "Prompt":
            if prompt.result == nil { Self.printError(prompt.message) }
            bus.emitSignal(
                path: path, interface: Self.secretInterface + "Prompt", member: "Completed",
                [.boolean(prompt.result == nil), .variant(prompt.result ?? .objectPaths([]))])
            return []
        case "Dismiss":
            bus.emitSignal(
                path: path, interface: Self.secretInterface + "Prompt", member: "Completed",
                [.boolean(true), .variant(.objectPaths([]))])
            return []
        default:
            throw unknown(member, path)
        }
    }

    /// Whether the vault is locked (a passphrase vault not unlocked); after `vault unlock`, the next
    /// look opens it again and finds it unlocked.
    var isLocked: Bool {
        if vault.isLocked { reopenVault() }
        return vault.isLocked
    }

    /// Opens the vault again, to take up `vault unlock`'s cache.
    func reopenVault() {
        guard let reopened = try? Self.openVault(options) else { return }
        vault = reopened
        index = [:]
        try? serveGroups(allGroups)
    }

    func groupAttributes(_ group: AccessGroup) -> ItemAttributes {
        var attributes = ItemAttributes()
        attributes.accessGroup = group
        return attributes
    }

    /// Makes the vault's client name `groups`, so that its queries reach them.
    func serveGroups(_ groups: [AccessGroup]) throws(ServiceError) {
        do {
            let client = try Client(applicationIdentifier: "secret-service", accessGroups: groups.map(\.rawValue))
            vault = vault.asClient(client)
        } catch {
            throw ServiceError(error, "cannot serve the groups")
        }
    }

    /// Makes the group of a new collection labelled `label` (named after it), or gives the default
    /// collection for alias `default`.
    func createCollection(label: String, alias: String) throws(ServiceError) -> AccessGroup {
        if alias == "default" { return defaultGroup }
        guard let group = groupName(forLabel: label.isEmpty ? alias : label) else {
            throw ServiceError(.invalidArgs, "no group name can be made of the label \"\(label)\"")
        }
        do {
            try vault.createGroup(group, unixGroup: nil)
        } catch {
            throw ServiceError(error, "cannot make collection \(group)")
        }
        groups.append(group)
        try serveGroups(allGroups)
        try setCollectionLabel(label.isEmpty ? group.rawValue : label, of: group, madeByClient: true)
        announce(.collectionCreated(group))
        return group
    }
}
