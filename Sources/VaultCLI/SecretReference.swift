import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

/// A generic password named on a command line or in a template: `SERVICE`, `SERVICE/ACCOUNT`, and either
/// after `@GROUP/` to read it from that access group. The first unescaped `/` ends the group, then the
/// service; the account is the rest. A backslash takes the next character as it is (`\/`, `\@`, `\}`,
/// `\\`), for names that hold those characters.
package struct SecretReference: Sendable, Hashable, CustomStringConvertible {
    /// The group, when the reference names one.
    let group: AccessGroup?
    /// The item.
    let name: ItemName
    /// The reference as written, for messages.
    let text: String

    /// Parses `text`; the error says what is wrong with it.
    init(_ text: String) throws(UsageError) {
        self.text = text
        var parts: [String] = [""]
        var escaped = false
        var namesGroup = false
        var first = true
        for character in text {
            defer { first = false }
            if escaped {
                parts[parts.count - 1].append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "@" && first {
                namesGroup = true
            } else if character == "/" && parts.count < (namesGroup ? 3 : 2) {
                parts.append("")
            } else {
                parts[parts.count - 1].append(character)
            }
        }
        if escaped { throw UsageError("secret \"\(text)\" ends with a lone backslash (write \\\\ for one)") }
        if namesGroup {
            guard parts.count >= 2 else {
                throw UsageError("secret \"\(text)\" names a group but no service (write @GROUP/SERVICE[/ACCOUNT])")
            }
            do throws(VaultError) {
                group = try AccessGroup(parts.removeFirst())
            } catch {
                throw UsageError("secret \"\(text)\": \(error.message)")
            }
        } else {
            group = nil
        }
        guard !parts[0].isEmpty else {
            throw UsageError("secret \"\(text)\" names no service (write SERVICE, SERVICE/ACCOUNT or @GROUP/SERVICE)")
        }
        name = .generic(service: parts[0], account: parts.count > 1 ? parts[1] : "")
    }

    /// The reference for messages: `secret "db/app"`.
    package var description: String { "secret \"\(text)\"" }

    /// The secret's bytes from `vault`: in the reference's group, else in `--group`, else in any of the
    /// client's groups. A missing or locked item fails as `vault get` does, naming the reference.
    func read(from vault: Vault, in context: Context) throws(CLIError) -> [UInt8] {
        var searched = group
        if searched == nil { searched = try context.group() }
        let item = try context.attempt(vault, "\(self) (\(name))") { () throws(VaultError) in
            try vault.copyMatching(name.query(group: searched), returning: [.data])[0]
        }
        var data = item.data ?? Data()
        defer { data.wipe() }
        return [UInt8](data)
    }
}
