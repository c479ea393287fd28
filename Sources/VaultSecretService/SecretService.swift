import FoundationEssentials
import Vault
import VaultDBus
import VaultFleet
import VaultSystem

/// The freedesktop Secret Service API 0.2 (`org.freedesktop.secrets` on the session bus) over a vault:
/// each collection is an access group of the vault, each item a vault item (`SecretItemMapping`). One
/// thread reads one message at a time and answers it; the process exits after `idleExit` without a
/// message and a session, or when the bus goes.
package final class SecretService {
    /// How the service is started.
    package struct Options {
        /// The vault's directory (nil: `$VAULT_DIR`, else the default).
        package var vaultPath: String?
        /// The group of the `default` collection.
        package var defaultGroup: AccessGroup
        /// Seconds without a client after which the service exits (nil: never).
        package var idleExit: Int?

        package init(vaultPath: String?, defaultGroup: AccessGroup, idleExit: Int?) {
            self.vaultPath = vaultPath
            self.defaultGroup = defaultGroup
            self.idleExit = idleExit
        }
    }

    static let busName = "org.freedesktop.secrets"
    static let servicePath = "/org/freedesktop/secrets"
    static let collectionPrefix = "/org/freedesktop/secrets/collection/"
    static let aliasPrefix = "/org/freedesktop/secrets/aliases/"
    static let sessionPrefix = "/org/freedesktop/secrets/session/"
    static let promptPrefix = "/org/freedesktop/secrets/prompt/"
    static let secretInterface = "org.freedesktop.Secret."

    let options: Options
    let bus: DBusConnection
    var vault: Vault
    /// The groups served as collections, besides the default one: those the vault had at start, and
    /// those made since.
    var groups: [AccessGroup]
    var defaultGroup: AccessGroup
    var sessions: [String: Session] = [:]
    var prompts: [String: Prompt] = [:]
    var nextObjectNumber = 1
    /// The senders whose uid was checked, and whether it was this process's user.
    var checkedSenders: [String: Bool] = [:]
    /// The unique bus name of the client whose call is being answered.
    var currentSender = ""
    /// Each group's items as last read, while `watch` says its directory has not changed since.
    var index: [AccessGroup: [FoundItem]] = [:]
    let watch = try? DirectoryWatch()

    /// A client's session: its owner (the unique bus name that opened it) and its key (nil: `plain`).
    struct Session {
        let owner: String
        let crypto: SessionCrypto?
    }

    /// A prompt: what completing it gives the client (nil: it is dismissed).
    struct Prompt {
        let owner: String
        let result: DBusValue?
        let message: String
    }

    init(options: Options, bus: DBusConnection, vault: Vault) throws(ServiceError) {
        self.options = options
        self.bus = bus
        self.vault = vault
        defaultGroup = options.defaultGroup
        groups = []
        groups = try storedGroups()
        try serveGroups(allGroups)
    }

    /// Opens the vault, takes the bus name and answers until idle; the process's exit status.
    package static func run(_ options: Options) -> Int32 {
        let bus: DBusConnection
        do {
            bus = try DBusConnection()
        } catch {
            printError(
                "\(error.message); the Secret Service lives on a session bus: run the client and this under "
                    + "`dbus-run-session -- …`, or log in where dbus-user-session is installed (docs/SECRET-SERVICE.md)"
            )
            return 9
        }
        do {
            guard try bus.requestName(busName) else {
                printError("another program already serves \(busName) on this session bus; nothing to do")
                return 3
            }
            try bus.addMatch(
                "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'"
            )
        } catch {
            printError("\(error)")
            return 9
        }
        let service: SecretService
        do {
            service = try SecretService(options: options, bus: bus, vault: try openVault(options))
        } catch {
            printError(error.message)
            return 1
        }
        return service.serve()
    }

    static func openVault(_ options: Options) throws(ServiceError) -> Vault {
        do {
            let client = try Client(
                applicationIdentifier: "secret-service", accessGroups: [options.defaultGroup.rawValue])
            return try Vault.open(
                at: options.vaultPath, client: client, createIfMissing: true, fleet: .etcd(watching: false))
        } catch {
            throw ServiceError(error, "cannot open the vault")
        }
    }

    static func printError(_ message: String) {
        try? FileDescriptor.standardError.writeAll(Array("vault-secret-service: \(message)\n".utf8))
    }

    /// The loop: one message at a time until the bus goes or the service is idle long enough.
    func serve() -> Int32 {
        var idleSince = ContinuousClock.now
        while true {
            let message: DBusReceivedMessage?
            do {
                message = try bus.nextMessage(timeoutMilliseconds: 1000)
            } catch {
                return 0
            }
            if let message {
                handle(message)
                // A client's call keeps the service; the bus's signals (other clients coming and going)
                // do not.
                if message.isMethodCall { idleSince = ContinuousClock.now }
            } else if let idleExit = options.idleExit, sessions.isEmpty,
                ContinuousClock.now - idleSince >= .seconds(idleExit)
            {
                // The name goes first, so that the bus starts a new provider for the next client; a
                // call that came before is still answered.
                bus.releaseName(Self.busName)
                while let late = try? bus.nextMessage(timeoutMilliseconds: 0) { handle(late) }
                bus.flush()
                return 0
            }
        }
    }

    func handle(_ message: DBusReceivedMessage) {
        guard message.isMethodCall else {
            noteSignal(message)
            return
        }
        currentSender = message.sender
        do throws(ServiceError) {
            try requireSameUser(message.sender)
            try refreshGroups()
            guard let arguments = message.arguments else {
                throw ServiceError(.invalidArgs, "the arguments of \(message.member) could not be read")
            }
            var reply: [DBusValue]
            do {
                reply = try dispatch(message, arguments)
            } catch  where error.name == .isLocked && vault.isLocked {
                // `vault unlock` may have run since the vault was opened: once more on a new handle.
                reopenVault()
                guard !vault.isLocked else { throw error }
                reply = try dispatch(message, arguments)
            }
            bus.reply(to: message, reply)
        } catch {
            bus.replyError(to: message, error.name.rawValue, error.message)
        }
    }

    /// A client that leaves the bus loses its sessions and prompts (the bus daemon says so; no client
    /// can).
    func noteSignal(_ message: DBusReceivedMessage) {
        guard message.sender == "org.freedesktop.DBus", message.member == "NameOwnerChanged",
            let arguments = message.arguments, arguments.count == 3,
            let name = arguments[0].stringValue, arguments[2].stringValue == ""
        else { return }
        sessions = sessions.filter { $0.value.owner != name }
        prompts = prompts.filter { $0.value.owner != name }
        checkedSenders.removeValue(forKey: name)
    }

    /// Only this process's user may use the service (the session bus is the user's, but a bus can be
    /// configured to let others in).
    func requireSameUser(_ sender: String) throws(ServiceError) {
        let user = ProcessIdentity.effectiveUserID
        if let allowed = checkedSenders[sender] {
            guard allowed else { throw ServiceError(.accessDenied, "only uid \(user) may use this service") }
            return
        }
        let allowed = (try? bus.unixUser(of: sender)) == user
        checkedSenders[sender] = allowed
        guard allowed else { throw ServiceError(.accessDenied, "only uid \(user) may use this service") }
    }

    func newObjectPath(_ prefix: String) -> String {
        defer { nextObjectNumber += 1 }
        return prefix + String(nextObjectNumber)
    }

    // MARK: Paths

    /// What an object path names.
    enum Object {
        case service
        case collection(AccessGroup)
        case item(AccessGroup, PersistentReference)
        case session(String)
        case prompt(String)
    }

    func resolve(_ path: String) throws(ServiceError) -> Object {
        if path == Self.servicePath { return .service }
        if path.hasPrefix(Self.sessionPrefix), sessions[path] != nil { return .session(path) }
        if path.hasPrefix(Self.promptPrefix), prompts[path] != nil { return .prompt(path) }
        var rest: Substring
        var group: AccessGroup?
        if path.hasPrefix(Self.aliasPrefix + "default") {
            rest = path.dropFirst(Self.aliasPrefix.count + "default".count)
            group = defaultGroup
        } else if path.hasPrefix(Self.collectionPrefix) {
            rest = path.dropFirst(Self.collectionPrefix.count)
            let element = rest.prefix { $0 != "/" }
            rest = rest.dropFirst(element.count)
            group = Self.group(fromPathElement: element).flatMap { found in
                allGroups.contains(found) ? found : nil
            }
        } else {
            rest = ""
        }
        guard let group else { throw ServiceError(.noSuchObject, "no object at \(path)") }
        if rest.isEmpty { return .collection(group) }
        guard rest.hasPrefix("/"), let reference = Self.reference(fromPathElement: rest.dropFirst()) else {
            throw ServiceError(.noSuchObject, "no object at \(path)")
        }
        return .item(group, reference)
    }

    /// Every collection's group, the default one first.
    var allGroups: [AccessGroup] { [defaultGroup] + groups.filter { $0 != defaultGroup } }

    func collectionPath(_ group: AccessGroup) -> String { Self.collectionPrefix + Self.pathElement(group.rawValue) }

    func itemPath(_ reference: PersistentReference, in group: AccessGroup) -> String {
        collectionPath(group) + "/i" + reference.rawValue.map { Self.hexDigits($0) }.joined()
    }

    /// A group name as a path element (`[A-Za-z0-9_]`): other bytes as `_` and two hex digits.
    static func pathElement(_ name: String) -> String {
        var element = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                element.append(Character(Unicode.Scalar(byte)))
            default: element += "_" + hexDigits(byte)
            }
        }
        return element
    }

    static func group(fromPathElement element: Substring) -> AccessGroup? {
        var bytes: [UInt8] = []
        var rest = element.utf8[...]
        while let byte = rest.first {
            rest = rest.dropFirst()
            guard byte == UInt8(ascii: "_") else {
                bytes.append(byte)
                continue
            }
            guard rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
            rest = rest.dropFirst(2)
        }
        return try? AccessGroup(String(decoding: bytes, as: UTF8.self))
    }

    static func reference(fromPathElement element: Substring) -> PersistentReference? {
        // Bytes, not characters, are counted: two hex digits a byte.
        guard element.first == "i", element.utf8.count % 2 == 1 else { return nil }
        let digits = Array(element.utf8.dropFirst())
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let value = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(value)
        }
        return try? PersistentReference(Data(bytes))
    }

    static func hexDigits(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }

    /// Takes up the groups made or removed by others (`vault group create`, another client) since the
    /// last look: the vault's `groups` directory changed.
    func refreshGroups() throws(ServiceError) {
        let directory = vault.path + "/groups"
        if let watch {
            guard watch.changed(directory) else { return }
            try? watch.watch(directory)
            _ = watch.changed(directory)
        }
        let stored = try storedGroups()
        guard stored != groups else { return }
        groups = stored
        try serveGroups(allGroups)
    }

    func storedGroups() throws(ServiceError) -> [AccessGroup] {
        do {
            return try vault.storedGroups().map(\.group)
        } catch {
            throw ServiceError(error, "cannot list the vault's groups")
        }
    }
}
