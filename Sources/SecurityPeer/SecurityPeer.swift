import Foundation
import Security

/// A process that reads one password through the `Security` module, as a service written for Apple
/// platforms would: `vault-security-peer get SERVICE ACCOUNT` (a generic password) or
/// `vault-security-peer get-internet SERVER ACCOUNT` (an internet password, any protocol) prints the
/// secret. The vault, the identity and the key come from the environment (VAULT_DIR, VAULT_APP_ID,
/// CREDENTIALS_DIRECTORY, …). Exit status: 0, 1 for errSecItemNotFound, 2 for any other status (named on
/// standard error).
@main
struct SecurityPeer {
    static func main() {
        let arguments = CommandLine.arguments
        guard arguments.count == 4, ["get", "get-internet"].contains(arguments[1]) else {
            FileHandle.standardError.write(
                Data("usage: vault-security-peer get SERVICE ACCOUNT | get-internet SERVER ACCOUNT\n".utf8))
            exit(2)
        }
        let internet = arguments[1] == "get-internet"
        let query: [String: Any] = [
            kSecClass as String: internet ? kSecClassInternetPassword : kSecClassGenericPassword,
            (internet ? kSecAttrServer : kSecAttrService) as String: arguments[2],
            kSecAttrAccount as String: arguments[3],
            kSecReturnData as String: true,
        ]
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        guard status == errSecSuccess, let data = result as? Data else {
            let message = SecCopyErrorMessageString(status, nil) as String? ?? ""
            FileHandle.standardError.write(Data("vault-security-peer: OSStatus \(status): \(message)\n".utf8))
            exit(status == errSecItemNotFound ? 1 : 2)
        }
        FileHandle.standardOutput.write(data)
    }
}
