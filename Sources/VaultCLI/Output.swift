import FoundationEssentials
import Vault
import VaultArchive
import VaultSystem

/// Text output: tab-separated lines for pipes, aligned tables for terminals, JSON, dates.
enum Output {
    /// User-controlled text (a service, account, label or group name, a path, a message naming them)
    /// made safe for a tab-separated line, a table or an error line: it stays on one line with a fixed
    /// number of fields, and cannot send control sequences to a terminal or reorder the text around it.
    /// Backslash, tab, line feed and carriage return become `\\`, `\t`, `\n` and `\r`; the other C0
    /// controls and DEL become `\xHH` (two lower-case hex digits); the C1 controls (U+0080-U+009F) and
    /// the bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) become
    /// `\u{H...}` (the code point in lower-case hex). Every escape starts with a backslash and a literal
    /// backslash is doubled, so the text reads back unambiguously. Everything else is kept as it is.
    static func escape(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                result += "\\x" + (hex.count == 1 ? "0" + hex : hex)
            case _ where needsEscape(scalar):
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x5C, 0x7F...0x9F: return true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Rows as tab-separated lines.
    static func tabSeparated(_ rows: [[String]]) -> String {
        // Appended, not `joined`: the standard library's `joined` is not specialized, and its first call
        // looks its types up at run time (an eighth of a `vault ls`).
        var text = ""
        for row in rows {
            for (column, cell) in row.enumerated() {
                if column > 0 { text += "\t" }
                text += escape(cell)
            }
            text += "\n"
        }
        return text
    }

    /// Rows under a header, in columns padded to their widest cell.
    static func table(header: [String], _ rows: [[String]]) -> String {
        let all = [header] + rows.map { $0.map(escape) }
        var widths = [Int](repeating: 0, count: header.count)
        for row in all {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        var text = ""
        for row in all {
            for (column, cell) in row.enumerated() {
                if column == row.count - 1 {
                    text += cell
                } else {
                    text += cell + String(repeating: " ", count: widths[column] - cell.count + 2)
                }
            }
            text += "\n"
        }
        return text
    }

    /// A count with its noun, singular for one: "1 item", "2 items".
    static func count(_ number: Int, _ noun: String) -> String {
        "\(number) \(noun)\(number == 1 ? "" : "s")"
    }

    /// A date as ISO 8601 in UTC, e.g. "2026-11-30T05:47:51Z".
    static func date(_ date: Date?) -> String {
        guard let date else { return "" }
        return UTCTimestamp.iso8601(secondsSince1970: date.timeIntervalSince1970)
            ?? date.formatted(Date.ISO8601FormatStyle())
    }

    /// `value` as one line of JSON with sorted keys.
    static func json<T: Encodable>(_ value: T) throws(CLIError) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(value), as: UTF8.self) + "\n"
        } catch {
            // The output holds the secret (`get --json`), and EncodingError carries the value it failed on.
            let reason = (error as? EncodingError)?.redactedDescription ?? "\(error)"
            throw CLIError(.io, "json", "cannot encode the output: \(reason)")
        }
    }
}

/// An item as `ls --json` and `get --json` print it. The keys are a stable interface, each with one
/// meaning for both kinds of item (the table in docs/CLI.md; a test pins the key sets): a nil field is
/// left out of the object.
struct ItemJSON: Encodable {
    /// "generic" or "internet".
    var kind: String
    /// The access group the item lives in.
    var group: String
    /// kSecAttrService; generic passwords only ("" when it has none).
    var service: String?
    /// kSecAttrAccount ("" when it has none).
    var account: String
    /// kSecAttrServer; internet passwords only ("" when it has none).
    var server: String?
    /// kSecAttrProtocol as the name `--protocol` takes ("https"), or the four-letter code when it has
    /// no name; internet passwords with a protocol only.
    var `protocol`: String?
    /// kSecAttrPort; internet passwords with a port other than 0 only.
    var port: Int?
    /// kSecAttrPath; internet passwords with a non-empty path only.
    var path: String?
    /// kSecAttrLabel, when set.
    var label: String?
    /// kSecAttrComment, when set.
    var comment: String?
    /// kSecAttrDescription, when set.
    var description: String?
    /// The creation date, ISO 8601 in UTC.
    var created: String
    /// The modification date, ISO 8601 in UTC.
    var modified: String
    /// `get --json` only: the secret, as text or base64 (`secretEncoding`).
    var secret: String?
    /// `get --json` only: "utf8" when `secret` is the secret's text, "base64" when it is not UTF-8.
    var secretEncoding: String?

    init(_ item: MatchedItem, secret: Data? = nil) {
        let a = item.attributes
        kind = item.itemClass == .genericPassword ? "generic" : "internet"
        group = a.accessGroup?.rawValue ?? ""
        account = a.account ?? ""
        if item.itemClass == .genericPassword {
            service = a.service ?? ""
        } else {
            server = a.server ?? ""
            `protocol` = a.protocol.flatMap { $0.isEmpty ? nil : ProtocolName.name(for: $0) }
            port = a.port.flatMap { $0 == 0 ? nil : $0 }
            path = a.path.flatMap { $0.isEmpty ? nil : $0 }
        }
        label = a.label
        comment = a.comment
        description = a.itemDescription
        created = Output.date(a.creationDate)
        modified = Output.date(a.modificationDate)
        if let secret {
            if let text = String(validating: secret, as: UTF8.self) {
                self.secret = text
                secretEncoding = "utf8"
            } else {
                self.secret = secret.base64EncodedString()
                secretEncoding = "base64"
            }
        }
    }

    /// The service column of `ls`: the service, or the server as a URL-like text.
    var serviceColumn: String {
        if let service { return service }
        return InternetName.locator(
            server: server ?? "", protocolCode: `protocol`.flatMap(ProtocolName.code), port: port, path: path)
    }
}
