import Foundation
import Security

/// A process that reads and writes passwords through the `Security` module, as a service written for
/// Apple platforms would:
///
///     vault-security-peer get SERVICE ACCOUNT [ACCESS-GROUP]   print a generic password's secret
///     vault-security-peer put SERVICE ACCOUNT [ACCESS-GROUP]   store standard input as that secret
///                                                              (SecItemAdd, else SecItemUpdate)
///     vault-security-peer get-internet SERVER ACCOUNT          print an internet password (any protocol)
///
/// With ACCESS-GROUP the query carries `kSecAttrAccessGroup`; without, the client's groups are searched
/// (a put goes to its first). The vault, the identity and the key come from the environment
/// (VAULT_DIR, VAULT_ENTITLEMENTS, VAULT_APP_ID, CREDENTIALS_DIRECTORY, …). Exit status: 0, 1 for
/// errSecItemNotFound, 2 for any other status, named on standard error with the access group asked for.
@main
struct SecurityPeer {
    static let usage =
        "usage: vault-security-peer get|put SERVICE ACCOUNT [ACCESS-GROUP] | get-internet SERVER ACCOUNT"

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first, arguments.count >= 3,
            arguments.count <= (command == "get-internet" ? 3 : 4), ["get", "put", "get-internet"].contains(command)
        else {
            fail(usage, status: nil)
        }
        let internet = command == "get-internet"
        let group = arguments.count == 4 ? arguments[3] : nil
        var item: [String: Any] = [
            kSecClass as String: internet ? kSecClassInternetPassword : kSecClassGenericPassword,
            (internet ? kSecAttrServer : kSecAttrService) as String: arguments[1],
            kSecAttrAccount as String: arguments[2],
        ]
        if let group { item[kSecAttrAccessGroup as String] = group }
        let context = "\(arguments[1])/\(arguments[2])" + (group.map { " in access group \($0)" } ?? "")
        if command == "put" {
            put(FileHandle.standardInput.readDataToEndOfFile(), item: item, context: context)
            return
        }
        var query = item
        query[kSecReturnData as String] = true
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let data = result as? Data else {
            fail("cannot read \(context)", status: status)
        }
        FileHandle.standardOutput.write(data)
    }

    /// Adds the item with `data` as its secret, or changes the secret of the one that exists.
    static func put(_ data: Data, item: [String: Any], context: String) {
        var attributes = item
        attributes[kSecValueData as String] = data
        var status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecDuplicateItem {
            status = SecItemUpdate(item as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        }
        guard status == errSecSuccess else { fail("cannot store \(context)", status: status) }
    }

    /// Writes "vault-security-peer: WHAT: OSStatus N: MESSAGE" (or the usage) and exits 1 for
    /// errSecItemNotFound, else 2.
    static func fail(_ what: String, status: OSStatus?) -> Never {
        guard let status else {
            FileHandle.standardError.write(Data((what + "\n").utf8))
            exit(2)
        }
        let message = SecCopyErrorMessageString(status, nil) as String? ?? ""
        FileHandle.standardError.write(Data("vault-security-peer: \(what): OSStatus \(status): \(message)\n".utf8))
        exit(status == errSecItemNotFound ? 1 : 2)
    }
}
