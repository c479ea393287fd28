import Foundation
import Testing
import VaultArchive
import VaultTestSupport

@testable import Security

// Keychain code as Apple documents it and as apps commonly write it, unchanged: `[String: Any]`
// queries, `as CFDictionary`, `&result`, `kCFBooleanTrue`, `noErr`. References: Apple's articles
// "Adding a password to the keychain", "Searching for keychain items", "Updating and deleting
// keychain items" (developer.apple.com/documentation/security/keychain_services/keychain_items).

private struct Credentials: Equatable {
    var username: String
    var password: String
}

private enum KeychainError: Error, Equatable {
    case noPassword
    case unexpectedPasswordData
    case unhandledError(status: OSStatus)
}

private let server = "www.example.com"

private func addCredentials(_ credentials: Credentials) throws {
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrAccount as String: account,
        kSecAttrServer as String: server,
        kSecValueData as String: password,
    ]
    let status = SecItemAdd(query as CFDictionary, nil)
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

private func searchCredentials() throws -> Credentials {
    let query: [String: Any] = [
        kSecClass as String: kSecClassInternetPassword,
        kSecAttrServer as String: server,
        kSecMatchLimit as String: kSecMatchLimitOne,
        kSecReturnAttributes as String: true,
        kSecReturnData as String: true,
    ]
    var item: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &item)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
    guard let existingItem = item as? [String: Any],
        let passwordData = existingItem[kSecValueData as String] as? Data,
        let password = String(data: passwordData, encoding: String.Encoding.utf8),
        let account = existingItem[kSecAttrAccount as String] as? String
    else {
        throw KeychainError.unexpectedPasswordData
    }
    return Credentials(username: account, password: password)
}

private func updateCredentials(_ credentials: Credentials) throws {
    let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server]
    let account = credentials.username
    let password = credentials.password.data(using: String.Encoding.utf8)!
    let attributes: [String: Any] = [kSecAttrAccount as String: account, kSecValueData as String: password]
    let status = SecItemUpdate(query as CFDictionary, attributes as CFDictionary)
    guard status != errSecItemNotFound else { throw KeychainError.noPassword }
    guard status == errSecSuccess else { throw KeychainError.unhandledError(status: status) }
}

private func deleteCredentials() throws {
    let query: [String: Any] = [kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: server]
    let status = SecItemDelete(query as CFDictionary)
    guard status == errSecSuccess || status == errSecItemNotFound else {
        throw KeychainError.unhandledError(status: status)
    }
}

// The seed patterns: an archived value saved by delete-then-add with the key as service and account,
// loaded with return data and limit one; a device UUID read or created.

private struct Settings: Codable, Equatable {
    var theme: String
    var volume: Int
}

private func save(key: String, data: Data) -> OSStatus {
    let query =
        [
            kSecClass as String: kSecClassGenericPassword as String,
            kSecAttrService as String: key,
            kSecAttrAccount as String: key,
            kSecValueData as String: data,
        ] as [String: Any]
    SecItemDelete(query as CFDictionary)
    return SecItemAdd(query as CFDictionary, nil)
}

private func load(key: String) -> Data? {
    let query =
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: key,
            kSecAttrAccount as String: key,
            kSecReturnData as String: kCFBooleanTrue!,
            kSecMatchLimit as String: kSecMatchLimitOne,
        ] as [String: Any]
    var dataTypeRef: AnyObject? = nil
    let status: OSStatus = SecItemCopyMatching(query as CFDictionary, &dataTypeRef)
    if status == noErr {
        return dataTypeRef as! Data?
    } else {
        return nil
    }
}

private func deviceUUID() -> String {
    let key = "com.example.device-uuid"
    if let data = load(key: key), let text = String(data: data, encoding: .utf8) {
        return text
    }
    let created = UUID().uuidString
    _ = save(key: key, data: created.data(using: .utf8)!)
    return created
}

@Suite("Apple's documented examples and the seed patterns")
struct AppleExamplesTests {
    @Test("Add, search, update and delete an internet password as Apple's articles do")
    func documentedLifecycle() throws {
        try withTempVault {
            #expect(throws: KeychainError.noPassword) { try searchCredentials() }
            try addCredentials(Credentials(username: "appleseed", password: "s3cr3t"))
            #expect(throws: KeychainError.unhandledError(status: errSecDuplicateItem)) {
                try addCredentials(Credentials(username: "appleseed", password: "other"))
            }
            #expect(try searchCredentials() == Credentials(username: "appleseed", password: "s3cr3t"))
            try updateCredentials(Credentials(username: "jappleseed", password: "n3w"))
            #expect(try searchCredentials() == Credentials(username: "jappleseed", password: "n3w"))
            try deleteCredentials()
            #expect(throws: KeychainError.noPassword) { try searchCredentials() }
            try deleteCredentials()  // errSecItemNotFound is accepted
        }
    }

    @Test("Delete-then-add of archived data with the key as service and account, load with limit one")
    func archivedValueRoundTrip() throws {
        try withTempVault {
            let first = Settings(theme: "dark", volume: 7)
            #expect(save(key: "settings", data: try VaultArchive.encodeData(first)) == noErr)
            let loaded = try #require(load(key: "settings"))
            #expect(try VaultArchive.decode(Settings.self, from: loaded) == first)

            let second = Settings(theme: "light", volume: 3)
            #expect(save(key: "settings", data: try VaultArchive.encodeData(second)) == errSecSuccess)
            #expect(try VaultArchive.decode(Settings.self, from: try #require(load(key: "settings"))) == second)
            #expect(load(key: "missing") == nil)
        }
    }

    @Test("Get-or-create a device UUID: the second call reads what the first stored")
    func deviceIdentifier() throws {
        try withTempVault {
            let first = deviceUUID()
            #expect(UUID(uuidString: first) != nil)
            #expect(deviceUUID() == first)
        }
    }

    @Test("Queries built as NSMutableDictionary or [CFString: Any] work too")
    func foundationDictionaries() throws {
        try withTempVault {
            let add = NSMutableDictionary()
            add[kSecClass] = kSecClassGenericPassword
            add[kSecAttrService] = "svc"
            add[kSecAttrAccount] = "acct"
            add[kSecValueData] = "pw".data(using: .utf8)!
            #expect(SecItemAdd(add, nil) == errSecSuccess)

            let query: [CFString: Any] = [
                kSecClass: kSecClassGenericPassword, kSecAttrService: "svc", kSecReturnData: kCFBooleanTrue!,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            #expect((result as! CFData) as Data == Data("pw".utf8))
        }
    }

    @Test("A wrapper in the style of the common open-source ones: set, get, remove, all keys")
    func wrapperStyle() throws {
        struct Keychain {
            let service: String
            func set(_ value: String, key: String) -> Bool {
                let base: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword,
                    kSecAttrService as String: service,
                    kSecAttrAccount as String: key,
                ]
                let data = Data(value.utf8)
                let status = SecItemUpdate(base as CFDictionary, [kSecValueData as String: data] as CFDictionary)
                if status == errSecItemNotFound {
                    var attributes = base
                    attributes[kSecValueData as String] = data
                    attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                    attributes[kSecAttrSynchronizable as String] = kCFBooleanFalse
                    return SecItemAdd(attributes as CFDictionary, nil) == errSecSuccess
                }
                return status == errSecSuccess
            }
            func get(_ key: String) -> String? {
                var query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword,
                    kSecAttrService as String: service,
                    kSecAttrAccount as String: key,
                ]
                query[kSecReturnData as String] = kCFBooleanTrue
                query[kSecMatchLimit as String] = kSecMatchLimitOne
                query[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
                query[kSecUseAuthenticationUI as String] = kSecUseAuthenticationUISkip
                var result: AnyObject?
                guard SecItemCopyMatching(query as CFDictionary, &result) == noErr, let data = result as? Data else {
                    return nil
                }
                return String(data: data, encoding: .utf8)
            }
            func remove(_ key: String) -> Bool {
                let query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword,
                    kSecAttrService as String: service,
                    kSecAttrAccount as String: key,
                    kSecAttrSynchronizable as String: kSecAttrSynchronizableAny,
                ]
                let status = SecItemDelete(query as CFDictionary)
                return status == errSecSuccess || status == errSecItemNotFound
            }
            func allKeys() -> [String] {
                let query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword,
                    kSecAttrService as String: service,
                    kSecReturnAttributes as String: kCFBooleanTrue!,
                    kSecMatchLimit as String: kSecMatchLimitAll,
                ]
                var result: AnyObject?
                guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess,
                    let items = result as? [[String: Any]]
                else { return [] }
                return items.compactMap { $0[kSecAttrAccount as String] as? String }.sorted()
            }
        }
        try withTempVault {
            let keychain = Keychain(service: "com.example.wrapper")
            #expect(keychain.get("token") == nil)
            #expect(keychain.set("a", key: "token"))
            #expect(keychain.set("b", key: "token"))
            #expect(keychain.set("c", key: "refresh"))
            #expect(keychain.get("token") == "b")
            #expect(keychain.allKeys() == ["refresh", "token"])
            #expect(keychain.remove("token"))
            #expect(keychain.get("token") == nil)
            #expect(keychain.remove("token"))
            #expect(keychain.allKeys() == ["refresh"])
        }
    }
}
