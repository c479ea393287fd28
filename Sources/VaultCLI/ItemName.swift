import Vault
import VaultSystem

/// Which item a command names: a generic password by service and account, or an internet password by
/// server, account, protocol, port and path. What is left out is empty ("" or port 0), as in Apple's
/// primary key, so that put, get and rm name exactly one item.
package enum ItemName: Sendable, Hashable, CustomStringConvertible {
    /// A generic password.
    case generic(service: String, account: String)
    /// An internet password.
    case internet(InternetName)

    /// The item for messages, e.g. `service "db", account "app"`.
    package var description: String {
        switch self {
        case .generic(let service, let account):
            return "service \"\(service)\", account \"\(account)\""
        case .internet(let name):
            return "server \"\(name.locator)\", account \"\(name.account)\""
        }
    }

    /// The operands that name an item: SERVICE [ACCOUNT], or with `--server` ACCOUNT alone.
    static let operands = [OperandSpec("SERVICE", .service), OperandSpec("ACCOUNT")]

    /// The item's class.
    var itemClass: ItemClass {
        if case .internet = self { return .internetPassword }
        return .genericPassword
    }

    /// Every primary-key attribute (but the group).
    var attributes: ItemAttributes {
        switch self {
        case .generic(let service, let account):
            return ItemAttributes(service: service, account: account)
        case .internet(let name):
            var a = ItemAttributes()
            a.server = name.server
            a.account = name.account
            a.protocol = name.protocolCode ?? ""
            a.port = name.port ?? 0
            a.path = name.path ?? ""
            a.securityDomain = ""
            a.authenticationType = ""
            return a
        }
    }

    /// The query for exactly this item, in `group` or in all the client's groups.
    func query(group: AccessGroup?) -> Query {
        var a = attributes
        a.accessGroup = group
        return Query(itemClass: itemClass, attributes: a)
    }
}

/// The name of an internet password.
package struct InternetName: Sendable, Hashable {
    /// kSecAttrServer.
    package var server: String
    /// kSecAttrAccount.
    package var account: String
    /// The kSecAttrProtocol code ("htps"), if given.
    package var protocolCode: String?
    /// kSecAttrPort, if given.
    package var port: Int?
    /// kSecAttrPath, if given.
    package var path: String?

    /// The server as a URL-like text: `https://example.com:8443/path`, or the bare server.
    var locator: String {
        Self.locator(server: server, protocolCode: protocolCode, port: port, path: path)
    }

    static func locator(server: String, protocolCode: String?, port: Int?, path: String?) -> String {
        var text = server
        if let protocolCode, !protocolCode.isEmpty { text = "\(ProtocolName.name(for: protocolCode))://" + text }
        if let port, port != 0 { text += ":\(port)" }
        if let path, !path.isEmpty { text += path.hasPrefix("/") ? path : "/" + path }
        return text
    }
}

/// The `--server`, `--protocol`, `--port` and `--path` options.
enum InternetOptions {
    static let specs: [OptionSpec] = [
        .value("server", "HOST", "an internet password for HOST instead of a generic password"),
        .value(
            "protocol", "P", "its protocol: https, http, ftp, ssh, imap, smtp, … or a four-letter code",
            kind: .choice(ProtocolName.table.map(\.name))),
        .value("port", "N", "its port (0...65535)"),
        .value("path", "PATH", "its path"),
    ]

    /// The internet-password filters given, checked; nil when `--server` is missing (and then none of
    /// the others may be given).
    static func parse(_ parsed: ParsedArguments, command: String) throws(UsageError) -> (
        server: String, protocolCode: String?, port: Int?, path: String?
    )? {
        guard let server = parsed.value("server") else {
            for name in ["protocol", "port", "path"] where parsed.value(name) != nil {
                throw UsageError("--\(name) needs --server (it belongs to internet passwords)", command: command)
            }
            return nil
        }
        var port: Int?
        if let text = parsed.value("port") {
            guard let value = Int(text), (0...65535).contains(value) else {
                throw UsageError("--port '\(text)' is not a number in 0...65535", command: command)
            }
            port = value
        }
        var protocolCode: String?
        if let text = parsed.value("protocol") {
            guard let code = ProtocolName.code(for: text) else {
                throw UsageError(
                    "--protocol '\(text)' is unknown; use a name such as https or a four-letter code", command: command)
            }
            protocolCode = code
        }
        return (server, protocolCode, port, parsed.value("path"))
    }

    /// The item that SERVICE [ACCOUNT] or --server HOST [ACCOUNT] names.
    static func itemName(_ parsed: ParsedArguments, command: String) throws(UsageError) -> ItemName {
        if let internet = try parse(parsed, command: command) {
            let operands = try parsed.operands(["ACCOUNT"], minimum: 0, command: command)
            return .internet(
                InternetName(
                    server: internet.server, account: operands.first ?? "", protocolCode: internet.protocolCode,
                    port: internet.port, path: internet.path))
        }
        let operands = try parsed.operands(["SERVICE", "ACCOUNT"], minimum: 1, command: command)
        return .generic(service: operands[0], account: operands.count > 1 ? operands[1] : "")
    }
}

/// The names of the `kSecAttrProtocol*` codes, as URL schemes.
enum ProtocolName {
    static let table: [(name: String, code: String)] = [
        ("ftp", "ftp "), ("ftpaccount", "ftpa"), ("http", "http"), ("irc", "irc "), ("nntp", "nntp"),
        ("pop3", "pop3"), ("smtp", "smtp"), ("socks", "sox "), ("imap", "imap"), ("ldap", "ldap"),
        ("appletalk", "atlk"), ("afp", "afp "), ("telnet", "teln"), ("ssh", "ssh "), ("ftps", "ftps"),
        ("https", "htps"), ("httpproxy", "htpx"), ("httpsproxy", "htsx"), ("ftpproxy", "ftpx"),
        ("smb", "smb "), ("rtsp", "rtsp"), ("rtspproxy", "rtsx"), ("daap", "daap"), ("eppc", "eppc"),
        ("ipp", "ipp "), ("nntps", "ntps"), ("ldaps", "ldps"), ("telnets", "tels"), ("imaps", "imps"),
        ("ircs", "ircs"), ("pop3s", "pops"), ("cifs", "cifs"),
    ]

    /// The code for a scheme name (any case) or a four-character code itself.
    static func code(for text: String) -> String? {
        let lower = text.lowercased()
        if let entry = table.first(where: { $0.name == lower }) { return entry.code }
        if let entry = table.first(where: { $0.code == text }) { return entry.code }
        return text.utf8.count == 4 ? text : nil
    }

    /// The scheme name of a code, or the code itself when it has none.
    static func name(for code: String) -> String {
        table.first { $0.code == code }?.name ?? code
    }
}
