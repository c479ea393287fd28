import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

/// `git-credential-vault get|store|erase` (the `vault` binary under that name): git's credential
/// helper protocol (git-credential(1), gitcredentials(7)). git writes `key=value` lines ending with a
/// blank line or end of file; `get` answers with `username=` and `password=` lines, `store` and
/// `erase` answer nothing. Credentials are internet-password items of the CLI's client (server, port,
/// protocol, path, account), the same items that `vault ls --server` and the `Security` module see.
/// `password_expiry_utc` is kept in the item's comment; `oauth_refresh_token` in an item of its own
/// (security domain `oauth_refresh_token`), since it is a secret. Unknown keys (`wwwauth[]`,
/// `capability[]`, …) are ignored, as git's documentation says helpers may.
enum GitCredentialHelper {
    /// The name git runs the helper under: `credential.helper = vault`.
    static let programName = "git-credential-vault"
    static let label = "git credential"
    static let refreshTokenDomain = "oauth_refresh_token"
    static let expiryPrefix = "password_expiry_utc="

    /// One credential description as git sends it.
    struct Description: Equatable {
        var fields: [String: String] = [:]

        init(_ text: String) {
            for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.isEmpty { break }
                guard let equals = line.firstIndex(of: "=") else { continue }
                fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
            if let url = fields["url"] { applyURL(url) }
        }

        /// `url=` (which git itself turns into parts, but a script may send) as protocol, host, path.
        mutating func applyURL(_ url: String) {
            guard let schemeEnd = url.firstRange(of: "://") else { return }
            fields["protocol"] = fields["protocol"] ?? String(url[..<schemeEnd.lowerBound])
            let rest = url[schemeEnd.upperBound...]
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            var authority = rest[..<slash]
            if let at = authority.lastIndex(of: "@") {
                let user = authority[..<at]
                if fields["username"] == nil {
                    fields["username"] = String(user.split(separator: ":", maxSplits: 1).first ?? "")
                }
                authority = authority[authority.index(after: at)...]
            }
            fields["host"] = fields["host"] ?? String(authority)
            if slash < rest.endIndex, fields["path"] == nil {
                let path = rest[rest.index(after: slash)...]
                if !path.isEmpty { fields["path"] = String(path) }
            }
        }

        /// The internet-password name (server, port, protocol, path) with `account`.
        func itemName(account: String) -> InternetName? {
            guard let host = fields["host"], !host.isEmpty, let scheme = fields["protocol"], !scheme.isEmpty else {
                return nil
            }
            var server = host
            var port: Int?
            if let colon = host.lastIndex(of: ":"), let number = Int(host[host.index(after: colon)...]),
                !host.hasSuffix("]")
            {
                server = String(host[..<colon])
                port = number
            }
            return InternetName(
                server: server, account: account, protocolCode: ProtocolName.code(for: scheme) ?? scheme,
                port: port ?? 0, path: fields["path"] ?? "")
        }
    }

    /// Runs `operation` with the description on standard input.
    static func run(_ arguments: [String], in context: Context) throws(CLIError) {
        guard arguments.count == 1, ["get", "store", "erase"].contains(arguments[0]) else {
            throw CLIError(.usage, programName, "usage: \(programName) get|store|erase (run by git)")
        }
        let input: [UInt8]
        do {
            input = try context.input.readAll(limit: 1 << 20)
        } catch {
            throw CLIError(.io, programName, "cannot read the credential description from git: \(error)")
        }
        let description = Description(String(decoding: input, as: UTF8.self))
        guard let probe = description.itemName(account: description.fields["username"] ?? "") else {
            return  // no protocol or host: nothing this helper can name
        }
        switch arguments[0] {
        case "get": try get(probe, account: description.fields["username"], in: context)
        case "store": try store(description, name: probe, in: context)
        default:
            try erase(
                probe, account: description.fields["username"], password: description.fields["password"],
                in: context)
        }
    }

    static func query(_ name: InternetName, account: String?, domain: String = "") -> Query {
        var query = ItemName.internet(name).query(group: nil)
        query.attributes.securityDomain = domain
        query.attributes.account = account
        query.limit = .all
        return query
    }

    static func get(_ name: InternetName, account: String?, in context: Context) throws(CLIError) {
        guard let vault = try context.openVaultIfPresent() else { return }  // no vault yet: no credential
        let found: [MatchedItem]
        do {
            found = try vault.copyMatching(query(name, account: account), returning: [.data, .attributes])
        } catch  where error.status == .itemNotFound {
            return
        } catch {
            throw CLIError(error, subject: programName, vaultPath: vault.path)
        }
        guard let item = found.first, var secret = item.data else { return }
        defer { secret.wipe() }
        let user = item.attributes.account ?? ""
        var tokenName = name
        tokenName.account = user
        var token = try? vault.copyMatching(
            query(tokenName, account: user, domain: refreshTokenDomain), returning: [.data]
        ).first?.data
        defer { token?.wipe() }
        // A newline or NUL in a value would end its line early, and what follows would reach git as lines of
        // its own (`url=`, `host=`, `quit=1`): such a credential is not sent at all.
        for (field, bytes) in [("username", Data(user.utf8)), ("password", secret), ("oauth_refresh_token", token)] {
            guard let bytes, bytes.contains(where: { $0 == 10 || $0 == 0 }) else { continue }
            throw CLIError(
                .integrity, programName,
                "the stored \(field) for \(name.server) holds a newline or NUL, which git's credential protocol "
                    + "cannot carry: not sent (replace it with `vault put --server …`)")
        }
        var lines = "username=\(user)\n"
        try context.write(lines)
        try context.write(bytes: Array("password=".utf8) + [UInt8](secret) + [UInt8(ascii: "\n")])
        lines = ""
        if let comment = item.attributes.comment, comment.hasPrefix(expiryPrefix), !comment.contains("\n"),
            !comment.contains("\0")
        {
            lines += comment + "\n"
        }
        if let token {
            try context.write(bytes: Array("oauth_refresh_token=".utf8) + [UInt8](token) + [UInt8(ascii: "\n")])
        }
        if !lines.isEmpty { try context.write(lines) }
    }

    static func store(_ description: Description, name: InternetName, in context: Context) throws(CLIError) {
        guard let user = description.fields["username"], let password = description.fields["password"] else {
            return  // git stores only complete credentials
        }
        // What git's own helpers refuse: a value that could not be sent back as one line.
        for (field, value) in description.fields where value.contains("\0") || value.contains("\n") {
            throw CLIError(
                .usage, programName,
                "the \(field) holds a NUL or newline, which git's credential protocol cannot carry: nothing was stored")
        }
        let vault = try context.openVault(creatingIfMissing: true)
        var item = name
        item.account = user
        var attributes = ItemName.internet(item).attributes
        attributes.label = label
        attributes.comment = description.fields["password_expiry_utc"].map { expiryPrefix + $0 } ?? ""
        do {
            try ItemUpsert.store(
                Data(password.utf8), as: .internet(item), group: nil, attributes: attributes, in: vault)
            var token = ItemName.internet(item).attributes
            token.securityDomain = refreshTokenDomain
            token.label = label + " (OAuth refresh token)"
            if let refresh = description.fields["oauth_refresh_token"] {
                try ItemUpsert.store(Data(refresh.utf8), itemClass: .internetPassword, attributes: token, in: vault)
            } else {
                _ = try? vault.delete(query(item, account: user, domain: refreshTokenDomain))
            }
        } catch {
            throw CLIError(error, subject: programName, vaultPath: vault.path)
        }
    }

    /// With a password in the request, only the credential that has that password goes (git 2.42 on:
    /// a `reject` of another helper's stale password must not erase this one's good one).
    static func erase(_ name: InternetName, account: String?, password: String?, in context: Context)
        throws(CLIError)
    {
        guard let vault = try context.openVaultIfPresent() else { return }
        if let password {
            let stored: [MatchedItem]
            do {
                stored = try vault.copyMatching(query(name, account: account), returning: [.data, .attributes])
            } catch {
                if error.status == .itemNotFound { return }
                throw CLIError(error, subject: programName, vaultPath: vault.path)
            }
            let matching = stored.filter { $0.data == Data(password.utf8) }
            guard !matching.isEmpty else { return }
            for item in matching {
                try erase(name, account: item.attributes.account ?? "", password: nil, in: context)
            }
            return
        }
        for domain in ["", refreshTokenDomain] {
            do {
                try vault.delete(query(name, account: account, domain: domain))
            } catch  where error.status == .itemNotFound {
                continue
            } catch {
                throw CLIError(error, subject: programName, vaultPath: vault.path)
            }
        }
    }
}
