import Foundation
import Security

// Keychain code written exactly as for iOS: only Foundation and Security, `[String: Any]` queries,
// `as CFDictionary`, `&result`. On Linux the vault stores the items (VAULT_DIR chooses where).

enum KeychainError: Error {
    case unexpectedStatus(OSStatus, String)
}

func check(_ status: OSStatus, _ what: String) throws {
    guard status == errSecSuccess else {
        let message = SecCopyErrorMessageString(status, nil).map { $0 as String } ?? "unknown"
        throw KeychainError.unexpectedStatus(status, "\(what): \(message)")
    }
}

/// Stores a password: delete any old one, then add (the classic pattern).
func savePassword(_ password: String, service: String, account: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
    ]
    SecItemDelete(query as CFDictionary)
    var attributes = query
    attributes[kSecValueData as String] = password.data(using: .utf8)!
    attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlock
    try check(SecItemAdd(attributes as CFDictionary, nil), "SecItemAdd")
}

/// Reads a password back: return data, limit one.
func loadPassword(service: String, account: String) throws -> String? {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecReturnData as String: kCFBooleanTrue!,
        kSecMatchLimit as String: kSecMatchLimitOne,
    ]
    var result: AnyObject?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecItemNotFound { return nil }
    try check(status, "SecItemCopyMatching")
    guard let data = result as? Data else { return nil }
    return String(data: data, encoding: .utf8)
}

/// A device identifier that survives reinstalls: read it, or create and store it.
func deviceIdentifier() throws -> String {
    let service = "com.example.device-id"
    if let existing = try loadPassword(service: service, account: service) { return existing }
    let identifier = UUID().uuidString
    try savePassword(identifier, service: service, account: service)
    return identifier
}

/// Updates a password in place.
func updatePassword(_ password: String, service: String, account: String) throws {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
    ]
    let changes: [String: Any] = [kSecValueData as String: password.data(using: .utf8)!]
    try check(SecItemUpdate(query as CFDictionary, changes as CFDictionary), "SecItemUpdate")
}

/// Lists the accounts of a service.
func accounts(service: String) throws -> [String] {
    let query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecMatchLimit as String: kSecMatchLimitAll,
        kSecReturnAttributes as String: true,
    ]
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecItemNotFound { return [] }
    try check(status, "SecItemCopyMatching")
    let items = result as? [[String: Any]] ?? []
    return items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
}

do {
    let service = "com.example.SecurityExample"
    let first = try deviceIdentifier()
    let second = try deviceIdentifier()
    guard first == second else { throw KeychainError.unexpectedStatus(errSecDecode, "device id changed") }
    print("device id: \(first)")

    try savePassword("hunter2", service: service, account: "alice")
    try savePassword("correct horse", service: service, account: "bob")
    try updatePassword("battery staple", service: service, account: "bob")
    guard try loadPassword(service: service, account: "alice") == "hunter2",
        try loadPassword(service: service, account: "bob") == "battery staple"
    else { throw KeychainError.unexpectedStatus(errSecDecode, "stored passwords differ") }
    print("accounts: \(try accounts(service: service).joined(separator: ", "))")

    let deleteQuery: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
    ]
    try check(SecItemDelete(deleteQuery as CFDictionary), "SecItemDelete")
    guard try loadPassword(service: service, account: "alice") == nil else {
        throw KeychainError.unexpectedStatus(errSecDecode, "item survived its deletion")
    }
    print("ok")
} catch {
    print("SecurityExample failed: \(error)")
    exit(1)
}
