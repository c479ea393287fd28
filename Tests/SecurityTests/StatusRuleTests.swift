import Foundation
import Testing
import VaultTestSupport

@testable import Security

/// A generic-password query for `service`/`account` plus `extra`.
private func genp(_ extra: [String: Any] = [:]) -> [String: Any] {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: "svc",
        kSecAttrAccount as String: "acct",
    ]
    query.merge(extra) { _, new in new }
    return query
}

private func copyStatus(_ query: [String: Any]) -> OSStatus {
    var result: CFTypeRef?
    return SecItemCopyMatching(query as CFDictionary, &result)
}

@Suite("Parameter checks and statuses as Apple's")
struct StatusRuleTests {
    @Test("A dictionary without kSecClass is errSecParam in all four functions")
    func missingClass() throws {
        try withTempVault {
            let query: [String: Any] = [kSecAttrService as String: "svc", kSecValueData as String: Data("x".utf8)]
            var result: CFTypeRef?
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecParam)
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecParam)
            #expect(SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: "l"] as CFDictionary) == errSecParam)
            #expect(SecItemDelete(query as CFDictionary) == errSecParam)
            #expect(SecItemAdd([kSecClass as String: 7] as CFDictionary, nil) == errSecParam)
        }
    }

    @Test("An unknown class is errSecNoSuchClass")
    func unknownClass() throws {
        try withTempVault {
            let query: [String: Any] = [kSecClass as String: "blob", kSecAttrAccount as String: "a"]
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecNoSuchClass)
            #expect(copyStatus(query) == errSecNoSuchClass)
            #expect(SecItemDelete(query as CFDictionary) == errSecNoSuchClass)
        }
    }

    @Test("Certificates, keys and identities answer errSecUnimplemented", arguments: ["cert", "keys", "idnt"])
    func unimplementedClasses(name: String) throws {
        let itemClass: CFString = [
            "cert": kSecClassCertificate, "keys": kSecClassKey, "idnt": kSecClassIdentity,
        ][name]!
        try withTempVault {
            let query: [String: Any] = [kSecClass as String: itemClass, kSecAttrLabel as String: "l"]
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecUnimplemented)
            #expect(copyStatus(query) == errSecUnimplemented)
            #expect(
                SecItemUpdate(query as CFDictionary, [kSecAttrLabel as String: "m"] as CFDictionary)
                    == errSecUnimplemented)
            #expect(SecItemDelete(query as CFDictionary) == errSecUnimplemented)
            let message = SecCopyErrorMessageString(errSecUnimplemented, nil)! as String
            #expect(message == "Function or operation not implemented.")
        }
    }

    @Test("An attribute the class does not have is errSecNoSuchAttr")
    func unknownAttribute() throws {
        try withTempVault {
            #expect(
                addGenericPassword(service: "s", account: "a", password: "p", extra: ["zzzz": "x"]) == errSecNoSuchAttr)
            // A key attribute and an internet-password attribute on a generic password.
            #expect(
                addGenericPassword(
                    service: "s", account: "a", password: "p", extra: [kSecAttrApplicationTag as String: Data()])
                    == errSecNoSuchAttr)
            #expect(copyStatus(genp([kSecAttrServer as String: "example.com"])) == errSecNoSuchAttr)
            let inet: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrService as String: "svc",
                kSecValueData as String: Data(),
            ]
            #expect(SecItemAdd(inet as CFDictionary, nil) == errSecNoSuchAttr)
            // In the attributes of an update, every key but kSecValueData must be an attribute.
            #expect(addGenericPassword(service: "svc", account: "acct", password: "p") == errSecSuccess)
            #expect(SecItemUpdate(genp() as CFDictionary, ["zzzz": "x"] as CFDictionary) == errSecNoSuchAttr)
            #expect(
                SecItemUpdate(genp() as CFDictionary, [kSecClass as String: kSecClassGenericPassword] as CFDictionary)
                    == errSecNoSuchAttr)
            // Keys that are neither attributes nor search, return, use or value keys are errSecParam.
            #expect(copyStatus(genp(["accountName": "x"])) == errSecParam)
        }
    }

    @Test("kSecValueData that is not data is errSecParam")
    func valueDataNotData() throws {
        try withTempVault {
            var query = genp()
            query[kSecValueData as String] = "a string, not Data"
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecParam)
            #expect(addGenericPassword(service: "svc", account: "acct", password: "p") == errSecSuccess)
            #expect(SecItemUpdate(genp() as CFDictionary, [kSecValueData as String: 42] as CFDictionary) == errSecParam)
        }
    }

    @Test(
        "Return keys in the query of an update are errSecParam",
        arguments: ["r_Data", "r_Attributes", "r_Ref", "r_PersistentRef"])
    func returnKeysInUpdate(key: String) throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "acct", password: "p") == errSecSuccess)
            let changes = [kSecValueData as String: Data("q".utf8)] as CFDictionary
            #expect(SecItemUpdate(genp([key: true]) as CFDictionary, changes) == errSecParam)
            // A return key that is false asks for nothing and is accepted, as Apple's is.
            #expect(SecItemUpdate(genp([key: false]) as CFDictionary, changes) == errSecSuccess)
        }
    }

    @Test("Delete with kSecMatchLimitOne, a number or another search key is errSecParam and deletes nothing")
    func deleteWithLimit() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "acct", password: "p") == errSecSuccess)
            #expect(SecItemDelete(genp([kSecMatchLimit as String: kSecMatchLimitOne]) as CFDictionary) == errSecParam)
            #expect(SecItemDelete(genp([kSecMatchLimit as String: 2]) as CFDictionary) == errSecParam)
            #expect(
                SecItemDelete(
                    genp([kSecMatchLimit as String: kSecMatchLimitAll, kSecMatchCaseInsensitive as String: false])
                        as CFDictionary) == errSecParam)
            #expect(copyStatus(genp()) == errSecSuccess)
            #expect(SecItemDelete(genp() as CFDictionary) == errSecSuccess)
            #expect(copyStatus(genp()) == errSecItemNotFound)
        }
    }

    /// What Valet and KeychainAccess send on every platform but iOS (Apple's macOS client strips the
    /// key before its server's check), so it must work on Linux.
    @Test("Delete with kSecMatchLimitAll deletes every match, as Apple's macOS keychain does")
    func deleteWithLimitAll() throws {
        try withTempVault {
            for account in ["a", "b", "c"] {
                #expect(addGenericPassword(service: "svc", account: account, password: "p") == errSecSuccess)
            }
            #expect(addGenericPassword(service: "other", account: "a", password: "p") == errSecSuccess)
            var query = genp([kSecMatchLimit as String: kSecMatchLimitAll])
            query[kSecAttrAccount as String] = nil
            #expect(SecItemDelete(query as CFDictionary) == errSecSuccess)
            var svc = genp()
            svc[kSecAttrAccount as String] = nil
            #expect(copyStatus(svc) == errSecItemNotFound)
            var other = genp([kSecAttrService as String: "other"])
            other[kSecAttrAccount as String] = nil
            #expect(copyStatus(other) == errSecSuccess)
            #expect(SecItemDelete(query as CFDictionary) == errSecItemNotFound)
        }
    }

    @Test("Add with a search key is errSecParam")
    func addWithSearchKey() throws {
        try withTempVault {
            var query = genp([kSecMatchLimit as String: kSecMatchLimitOne])
            query[kSecValueData as String] = Data("p".utf8)
            #expect(SecItemAdd(query as CFDictionary, nil) == errSecParam)
        }
    }

    @Test("Return keys with a nil result pointer are errSecParam; without return keys nil is fine")
    func returnWithoutPointer() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "acct", password: "p") == errSecSuccess)
            #expect(SecItemCopyMatching(genp([kSecReturnData as String: true]) as CFDictionary, nil) == errSecParam)
            #expect(SecItemCopyMatching(genp() as CFDictionary, nil) == errSecSuccess)
        }
    }

    @Test("Wrong value types are errSecParam")
    func wrongValueTypes() throws {
        try withTempVault {
            #expect(copyStatus(genp([kSecReturnData as String: "yes"])) == errSecParam)
            #expect(copyStatus(genp([kSecMatchLimit as String: "m_LimitSome"])) == errSecParam)
            #expect(copyStatus(genp([kSecMatchLimit as String: 0])) == errSecParam)
            #expect(copyStatus(genp([kSecAttrAccount as String: 12])) == errSecParam)
            #expect(copyStatus(genp([kSecAttrPort as String: "80"])) == errSecNoSuchAttr)  // not a genp attribute
            #expect(
                addGenericPassword(
                    service: "s", account: "a", password: "p", extra: [kSecAttrAccessible as String: "sometimes"])
                    == errSecParam)
            #expect(
                addGenericPassword(
                    service: "s", account: "a", password: "p", extra: [kSecAttrIsInvisible as String: "no"])
                    == errSecParam)
            #expect(
                addGenericPassword(
                    service: "s", account: "a", password: "p", extra: [kSecAttrCreationDate as String: "today"])
                    == errSecParam)
            #expect(copyStatus(genp([kSecValuePersistentRef as String: Data("not a reference".utf8)])) == errSecParam)
            #expect(copyStatus(genp([kSecValueRef as String: Data()])) == errSecParam)
            #expect(copyStatus(genp([kSecReturnData as String: true, "r_Everything": true])) == errSecParam)
        }
    }

    @Test("kSecUse keys about user interface are accepted and ignored; unknown ones are errSecParam")
    func useKeys() throws {
        try withTempVault {
            #expect(
                addGenericPassword(
                    service: "svc", account: "acct", password: "p",
                    extra: [
                        kSecUseDataProtectionKeychain as String: true, kSecAttrSyncViewHint as String: "",
                    ]) == errSecSuccess)
            #expect(
                copyStatus(
                    genp([
                        kSecUseOperationPrompt as String: "Authenticate to read",
                        kSecUseAuthenticationUI as String: kSecUseAuthenticationUIFail,
                        kSecUseAuthenticationContext as String: NSObject(),
                    ])) == errSecSuccess)
            #expect(copyStatus(genp(["u_Whatever": true])) == errSecParam)
            #expect(copyStatus(genp([kSecUseItemList as String: NSArray()])) == errSecParam)
            #expect(copyStatus(genp([kSecMatchCaseInsensitive as String: true])) == errSecUnimplemented)
            #expect(copyStatus(genp([kSecMatchCaseInsensitive as String: false])) == errSecSuccess)
        }
    }

    @Test("Duplicates, missing items and missing entitlements keep Apple's statuses")
    func vaultStatuses() throws {
        try withTempVault(groups: ["TEAMID.shared"]) {
            #expect(addGenericPassword(service: "svc", account: "acct", password: "first") == errSecSuccess)
            #expect(addGenericPassword(service: "svc", account: "acct", password: "second") == errSecDuplicateItem)
            var result: CFTypeRef?
            #expect(
                SecItemCopyMatching(genp([kSecReturnData as String: true]) as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("first".utf8))

            let other = genp([kSecAttrAccount as String: "nobody"])
            #expect(copyStatus(other) == errSecItemNotFound)
            #expect(
                SecItemUpdate(other as CFDictionary, [kSecAttrLabel as String: "l"] as CFDictionary)
                    == errSecItemNotFound)
            #expect(SecItemDelete(other as CFDictionary) == errSecItemNotFound)

            let foreign = genp([kSecAttrAccessGroup as String: "OTHERTEAM.secret"])
            #expect(copyStatus(foreign) == errSecMissingEntitlement)
            #expect(
                addGenericPassword(
                    service: "s", account: "a", password: "p",
                    extra: [kSecAttrAccessGroup as String: "OTHERTEAM.secret"]) == errSecMissingEntitlement)
        }
    }

    @Test("An update onto another item's primary key is errSecDuplicateItem and changes nothing")
    func updateOntoExisting() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pa") == errSecSuccess)
            #expect(addGenericPassword(service: "svc", account: "b", password: "pb") == errSecSuccess)
            let status = SecItemUpdate(
                genp([kSecAttrAccount as String: "a"]) as CFDictionary, [kSecAttrAccount as String: "b"] as CFDictionary
            )
            #expect(status == errSecDuplicateItem)
            var result: CFTypeRef?
            #expect(
                SecItemCopyMatching(
                    genp([kSecAttrAccount as String: "a", kSecReturnData as String: true]) as CFDictionary, &result)
                    == errSecSuccess)
            #expect(result as? Data == Data("pa".utf8))
        }
    }

    @Test("The internal errors name the problem without the secret")
    func messagesHoldNoSecret() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "acct", password: "TopSecret123") == errSecSuccess)
            var query = genp()
            query[kSecValueData as String] = Data("TopSecret123".utf8)
            do throws(SecStatusError) {
                _ = try SecItemOperations.add(query as CFDictionary)
                Issue.record("the duplicate was added")
            } catch {
                #expect(error.status == errSecDuplicateItem)
                #expect(error.message.contains("svc"))
                #expect(!error.message.contains("TopSecret123"))
            }
        }
    }
}
