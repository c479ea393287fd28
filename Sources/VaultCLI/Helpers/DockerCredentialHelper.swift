import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

/// `docker-credential-vault store|get|erase|list|version` (the `vault` binary under that name): the
/// docker credential-helpers protocol, for `credsStore`/`credHelpers` in `~/.docker/config.json` and
/// for podman's and skopeo's `credHelpers`. `store` reads `{"ServerURL", "Username", "Secret"}` JSON;
/// `get` and `erase` read the bare server URL; `get` writes the JSON back; `list` writes a
/// server-URL-to-username map. Failures are one line on standard output and exit status 1, as the
/// protocol's clients read them; a miss is exactly "credentials not found in native keychain".
/// Credentials are internet-password items of the CLI's client (server, port, protocol, path from the
/// URL; the URL itself as the description) labelled "Docker Credentials", which `list` filters on.
/// The account is empty and the username is the comment, so that the server URL alone names the item:
/// `store` and `get` are keyed reads and writes, not scans. Credentials that 0.1.0 stored with the
/// username as the account are still read (a scan, only when the keyed read misses), and `erase` (a
/// scan: rare, at a logout) removes them with the current one.
enum DockerCredentialHelper {
    static let programName = "docker-credential-vault"
    static let label = "Docker Credentials"
    static let notFound = "credentials not found in native keychain"

    /// The protocol's JSON, with its field names.
    struct Credentials: Codable {
        var ServerURL: String
        var Username: String
        var Secret: String
    }

    /// A failure as the protocol reports it: one line on standard output.
    struct Failure: Error {
        let message: String
        let code: ExitCode
        init(_ message: String, code: ExitCode = .notFound) {
            self.message = message
            self.code = code
        }
    }

    /// The item a server URL names: `https://registry.example:5000/v2/` → server, port, protocol, path.
    static func itemName(_ serverURL: String, account: String = "") -> InternetName {
        var rest = Substring(serverURL)
        var protocolCode = ""
        if let scheme = rest.firstRange(of: "://") {
            protocolCode = ProtocolName.code(for: String(rest[..<scheme.lowerBound])) ?? ""
            rest = rest[scheme.upperBound...]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var host = rest[..<slash]
        let path = String(rest[slash...])
        var port = 0
        if let colon = host.lastIndex(of: ":"), let number = Int(host[host.index(after: colon)...]) {
            port = number
            host = host[..<colon]
        }
        return InternetName(server: String(host), account: account, protocolCode: protocolCode, port: port, path: path)
    }

    static func run(_ arguments: [String], in context: Context) throws(CLIError) {
        let action = arguments.count == 1 ? arguments[0] : ""
        let outcome: Result<Void, Failure> = Result { () throws(Failure) in
            switch action {
            case "store": try store(try input(context), in: context)
            case "get": try get(try serverURL(context), in: context)
            case "erase": try erase(try serverURL(context), in: context)
            case "list": try list(in: context)
            case "version": try write("\(programName) (vault \(VaultCLI.version))\n", context)
            default: throw Failure("usage: \(programName) store|get|erase|list|version", code: .usage)
            }
        }
        if case .failure(let failure) = outcome {
            // The protocol's clients read the reason from standard output.
            try? context.write(failure.message + "\n")
            throw CLIError(failure.code, programName, failure.message, reported: true)
        }
    }

    /// A CLI failure (an unusable vault, say) as the protocol's one line.
    static func lift<R>(_ body: () throws(CLIError) -> R) throws(Failure) -> R {
        do {
            return try body()
        } catch {
            throw Failure(
                CLIError(error.code, error.subject, error.message).line.dropLast().description, code: error.code)
        }
    }

    static func vaultError(_ error: VaultError) -> Failure {
        Failure("\(programName): \(error.message)", code: ExitCode(error.status))
    }

    static func write(_ text: String, _ context: Context) throws(Failure) {
        try lift { () throws(CLIError) in try context.write(text) }
    }

    static func input(_ context: Context) throws(Failure) -> [UInt8] {
        do {
            return try context.input.readAll(limit: 1 << 20)
        } catch {
            throw Failure("cannot read the request: \(error)", code: .io)
        }
    }

    static func serverURL(_ context: Context) throws(Failure) -> String {
        let text = String(decoding: try input(context), as: UTF8.self)
        let url = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        guard !url.isEmpty else { throw Failure("no credentials server URL", code: .usage) }
        return url
    }

    /// The credential of `serverURL`, by its primary key (account empty): one file read.
    static func keyedQuery(_ serverURL: String) -> Query {
        var query = ItemName.internet(itemName(serverURL)).query(group: nil)
        query.attributes.label = label
        return query
    }

    /// Every credential of `serverURL`, also those that 0.1.0 stored with the username as the account:
    /// a scan.
    static func query(_ serverURL: String) -> Query {
        var query = keyedQuery(serverURL)
        query.attributes.account = nil
        query.limit = .all
        return query
    }

    static func existingVault(_ context: Context) throws(Failure) -> Vault? {
        try lift { () throws(CLIError) in try context.openVaultIfPresent() }
    }

    static func store(_ body: [UInt8], in context: Context) throws(Failure) {
        guard let credentials = try? JSONDecoder().decode(Credentials.self, from: Data(body)) else {
            throw Failure("the request is not {\"ServerURL\", \"Username\", \"Secret\"} JSON", code: .usage)
        }
        guard !credentials.ServerURL.isEmpty else { throw Failure("no credentials server URL", code: .usage) }
        guard !credentials.Username.isEmpty else { throw Failure("no credentials username", code: .usage) }
        let vault = try lift { () throws(CLIError) in try context.openVault(creatingIfMissing: true) }
        var attributes = ItemName.internet(itemName(credentials.ServerURL)).attributes
        attributes.label = label
        attributes.itemDescription = credentials.ServerURL
        attributes.comment = credentials.Username
        var sameName = keyedQuery(credentials.ServerURL)
        sameName.attributes.label = nil
        if let other = try? vault.copyMatching(sameName, returning: [.attributes]).first,
            other.attributes.label != label
        {
            throw Failure(
                "\(programName): an internet password that is not a docker credential has the name of "
                    + "\(credentials.ServerURL) (its server, port, protocol and path, no account): not stored; "
                    + "remove it with `vault rm` or give it an account",
                code: .duplicate)
        }
        do {
            try ItemUpsert.store(
                Data(credentials.Secret.utf8), itemClass: .internetPassword, attributes: attributes, in: vault)
        } catch {
            throw vaultError(error)
        }
        // One credential per server, as docker expects: 0.1.0's item of this username goes once the new one
        // is stored (a keyed delete). Its items of other usernames are hidden by this one and go with `erase`.
        var legacy = keyedQuery(credentials.ServerURL)
        legacy.attributes.account = credentials.Username
        _ = try? vault.delete(legacy)
    }

    static func get(_ serverURL: String, in context: Context) throws(Failure) {
        guard let vault = try existingVault(context) else { throw Failure(notFound) }
        let found: [MatchedItem]
        do {
            do {
                found = try vault.copyMatching(keyedQuery(serverURL), returning: [.data, .attributes])
            } catch  where error.status == .itemNotFound {
                found = try vault.copyMatching(query(serverURL), returning: [.data, .attributes])
            }
        } catch {
            // A locked, damaged or unreadable vault is said as such, never as "not found".
            throw error.status == .itemNotFound ? Failure(notFound) : vaultError(error)
        }
        guard let item = found.first, var secret = item.data else { throw Failure(notFound) }
        defer { secret.wipe() }
        // The protocol's JSON carries text: a secret that is not UTF-8 would reach docker changed.
        guard let secretText = String(validating: secret, as: UTF8.self) else {
            throw Failure(
                "the stored secret for \(serverURL) is not UTF-8 text, which the protocol's JSON cannot carry "
                    + "unchanged: not sent",
                code: .integrity)
        }
        let credentials = Credentials(ServerURL: serverURL, Username: username(item.attributes), Secret: secretText)
        let text = try lift { () throws(CLIError) in try Output.json(credentials) }
        try write(text, context)
    }

    /// A credential's username: the comment, or the account of one that 0.1.0 stored.
    static func username(_ attributes: ItemAttributes) -> String {
        attributes.account.flatMap { $0.isEmpty ? nil : $0 } ?? attributes.comment ?? ""
    }

    static func erase(_ serverURL: String, in context: Context) throws(Failure) {
        guard let vault = try existingVault(context) else { throw Failure(notFound) }
        do {
            try vault.delete(query(serverURL))
        } catch {
            throw error.status == .itemNotFound ? Failure(notFound) : vaultError(error)
        }
    }

    static func list(in context: Context) throws(Failure) {
        var map: [String: String] = [:]
        if let vault = try existingVault(context) {
            var query = Query(itemClass: .internetPassword, limit: .all)
            query.attributes.label = label
            let items: [MatchedItem]
            do {
                items = try vault.copyMatching(query, returning: [.attributes])
            } catch {
                guard error.status == .itemNotFound else { throw vaultError(error) }
                items = []
            }
            // A server's current credential (empty account) wins over those that 0.1.0 stored.
            for current in [false, true] {
                for item in items where (item.attributes.account ?? "").isEmpty == current {
                    map[item.attributes.itemDescription ?? item.attributes.server ?? ""] = username(item.attributes)
                }
            }
        }
        let text = try lift { () throws(CLIError) in try Output.json(map) }
        try write(text, context)
    }
}
