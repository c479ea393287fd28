import Foundation
import Testing
import Vault
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Security

/// kSecAttrAccessible decides what a locked (passphrase) vault can read, through the SecItem functions.
@Suite struct LockStateTests {
    @Test func aLockedVaultReadsAlwaysItemsAndSaysLockedForTheRest() throws {
        try withTemporaryDirectory("security-lock") { directory in
            let root = directory.path
            let client = try Client(applicationIdentifier: "TEAMID.com.example.app")
            let passphrase = KeySource(
                passphrase: { (_) throws(StoreError) in try secureBytes([1, 2, 3]) }, limits: .minimum)
            let unlocked = try Vault.create(at: root + "/vault", client: client, keySource: passphrase)
            let locked = try Vault.open(at: root + "/vault", client: client, keySource: KeySource())

            func add(_ service: String, _ accessible: CFString?) -> OSStatus {
                var query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                    kSecValueData as String: Data(service.utf8),
                ]
                if let accessible { query[kSecAttrAccessible as String] = accessible }
                return SecItemAdd(query as CFDictionary, nil)
            }
            // With the whole primary key (service and account) a read opens that one item's file.
            func read(_ service: String, account: String? = "") -> OSStatus {
                var query: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                    kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitOne,
                ]
                if let account { query[kSecAttrAccount as String] = account }
                var result: CFTypeRef?
                return SecItemCopyMatching(query as CFDictionary, &result)
            }

            VaultConnection.$override.withValue(unlocked) {
                #expect(add("always", kSecAttrAccessibleAlways) == errSecSuccess)
                #expect(add("after-first-unlock", kSecAttrAccessibleAfterFirstUnlock) == errSecSuccess)
                #expect(add("default", nil) == errSecSuccess)  // kSecAttrAccessibleWhenUnlocked
            }
            VaultConnection.$override.withValue(locked) {
                #expect(read("always") == errSecSuccess)
                #expect(read("after-first-unlock") == errSecInteractionNotAllowed)
                #expect(read("default") == errSecInteractionNotAllowed)
                #expect(read("missing") == errSecItemNotFound)
                // A search that spans locked items says locked, never "not found" or a partial answer.
                #expect(read("always", account: nil) == errSecInteractionNotAllowed)
                #expect(add("new", kSecAttrAccessibleWhenUnlocked) == errSecInteractionNotAllowed)
                #expect(add("new-always", kSecAttrAccessibleAlwaysThisDeviceOnly) == errSecSuccess)
            }
        }
    }
}
