import Foundation
import Testing
import VaultTestSupport

@testable import Security

private func attributes(_ query: [String: Any]) -> [String: Any]? {
    var q = query
    q[kSecReturnAttributes as String] = true
    var result: CFTypeRef?
    guard SecItemCopyMatching(q as CFDictionary, &result) == errSecSuccess else { return nil }
    return result as? [String: Any]
}

@Suite("Keychain behaviour through the Apple API")
struct SemanticsTests {
    @Test("Update keeps the creation date, moves the modification date and changes the secret")
    func updateDates() throws {
        try withTempVault {
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                kSecAttrAccount as String: "a",
            ]
            #expect(addGenericPassword(service: "svc", account: "a", password: "old") == errSecSuccess)
            let before = try #require(attributes(query))
            Thread.sleep(forTimeInterval: 0.01)
            let changes: [String: Any] = [kSecValueData as String: Data("new".utf8), kSecAttrLabel as String: "L"]
            #expect(SecItemUpdate(query as CFDictionary, changes as CFDictionary) == errSecSuccess)
            let after = try #require(attributes(query))
            #expect(after[kSecAttrCreationDate as String] as? Date == before[kSecAttrCreationDate as String] as? Date)
            let modifiedBefore = try #require(before[kSecAttrModificationDate as String] as? Date)
            let modifiedAfter = try #require(after[kSecAttrModificationDate as String] as? Date)
            #expect(modifiedAfter > modifiedBefore)
            #expect(after[kSecAttrLabel as String] as? String == "L")
            var result: CFTypeRef?
            var read = query
            read[kSecReturnData as String] = true
            #expect(SecItemCopyMatching(read as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("new".utf8))
        }
    }

    @Test("Update and delete change every match")
    func everyMatch() throws {
        try withTempVault {
            for account in ["a", "b", "c"] {
                #expect(addGenericPassword(service: "svc", account: account, password: "p") == errSecSuccess)
            }
            let service: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            ]
            #expect(
                SecItemUpdate(service as CFDictionary, [kSecAttrComment as String: "seen"] as CFDictionary)
                    == errSecSuccess)
            var all = service
            all[kSecMatchLimit as String] = kSecMatchLimitAll
            all[kSecAttrComment as String] = "seen"
            all[kSecReturnAttributes as String] = true
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(all as CFDictionary, &result) == errSecSuccess)
            #expect((result as? NSArray)?.count == 3)
            #expect(SecItemDelete(service as CFDictionary) == errSecSuccess)
            #expect(SecItemCopyMatching(service as CFDictionary, nil) == errSecItemNotFound)
        }
    }

    @Test("Synchronizable items are part of the key and hidden from queries that do not ask for them")
    func synchronizable() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "local") == errSecSuccess)
            #expect(
                addGenericPassword(
                    service: "svc", account: "a", password: "synced", extra: [kSecAttrSynchronizable as String: true])
                    == errSecSuccess)
            let base: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                kSecReturnData as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(base as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("local".utf8))
            var synced = base
            synced[kSecAttrSynchronizable as String] = kCFBooleanTrue
            #expect(SecItemCopyMatching(synced as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("synced".utf8))
            var any = base
            any[kSecAttrSynchronizable as String] = kSecAttrSynchronizableAny
            any[kSecMatchLimit as String] = kSecMatchLimitAll
            #expect(SecItemCopyMatching(any as CFDictionary, &result) == errSecSuccess)
            #expect((result as? [Data])?.count == 2)
            any.removeValue(forKey: kSecMatchLimit as String)
            any.removeValue(forKey: kSecReturnData as String)
            #expect(SecItemDelete(any as CFDictionary) == errSecSuccess)
            #expect(SecItemCopyMatching(synced as CFDictionary, &result) == errSecItemNotFound)
        }
    }

    @Test("Internet passwords: the whole primary key, ports and protocols")
    func internetPasswords() throws {
        try withTempVault {
            func add(_ port: Int, _ password: String) -> OSStatus {
                let item: [String: Any] = [
                    kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                    kSecAttrAccount as String: "me", kSecAttrProtocol as String: kSecAttrProtocolHTTPS,
                    kSecAttrAuthenticationType as String: kSecAttrAuthenticationTypeHTMLForm,
                    kSecAttrPort as String: port, kSecAttrPath as String: "/login",
                    kSecValueData as String: Data(password.utf8),
                ]
                return SecItemAdd(item as CFDictionary, nil)
            }
            #expect(add(443, "a") == errSecSuccess)
            #expect(add(8443, "b") == errSecSuccess)
            #expect(add(443, "c") == errSecDuplicateItem)
            let query: [String: Any] = [
                kSecClass as String: kSecClassInternetPassword, kSecAttrServer as String: "example.com",
                kSecAttrPort as String: 8443,
            ]
            let found = try #require(attributes(query))
            #expect(found[kSecAttrPort as String] as? Int == 8443)
            #expect(found[kSecAttrProtocol as String] as? String == "htps")
            #expect(found[kSecAttrAuthenticationType as String] as? String == "form")
            #expect(found[kSecAttrPath as String] as? String == "/login")
            #expect(found[kSecAttrService as String] == nil)
        }
    }

    @Test("Access groups: adds go to the first group, queries search all, other clients see nothing")
    func accessGroups() throws {
        let temp = try TempVault(app: "TEAMID.com.example.app", groups: ["TEAMID.shared"])
        try temp.run {
            #expect(addGenericPassword(service: "svc", account: "default", password: "p") == errSecSuccess)
            #expect(
                addGenericPassword(
                    service: "svc", account: "own", password: "p",
                    extra: [kSecAttrAccessGroup as String: "TEAMID.com.example.app"]) == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "default",
            ]
            #expect(try #require(attributes(query))[kSecAttrAccessGroup as String] as? String == "TEAMID.shared")

            let sharedOnly: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccessGroup as String: "TEAMID.shared",
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(sharedOnly as CFDictionary, &result) == errSecSuccess)
            #expect((result as? NSArray)?.count == 1)

            try temp.asClient(app: "TEAMID.com.example.widget", groups: ["TEAMID.shared"]) {
                #expect(attributes(query) != nil)
                let own: [String: Any] = [
                    kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "own",
                ]
                #expect(SecItemCopyMatching(own as CFDictionary, nil) == errSecItemNotFound)
            }
            try temp.asClient(app: "OTHER.app") {
                #expect(SecItemCopyMatching(query as CFDictionary, nil) == errSecItemNotFound)
            }
        }
    }

    @Test("kSecAttrAccessControl sets the item's protection class")
    func accessControl() throws {
        try withTempVault {
            var error: Unmanaged<CFError>?
            let access = try #require(
                SecAccessControlCreateWithFlags(
                    kCFAllocatorDefault, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, .userPresence, &error))
            #expect(error == nil)
            #expect(
                addGenericPassword(
                    service: "svc", account: "a", password: "p", extra: [kSecAttrAccessControl as String: access])
                    == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
            ]
            #expect(try #require(attributes(query))[kSecAttrAccessible as String] as? String == "aku")
            #expect(
                addGenericPassword(
                    service: "svc", account: "b", password: "p",
                    extra: [
                        kSecAttrAccessControl as String: access, kSecAttrAccessible as String: kSecAttrAccessibleAlways,
                    ]) == errSecParam)
        }
    }

    @Test("Attributes given as data or NSString are read as Apple reads them")
    func valueForms() throws {
        try withTempVault {
            let item: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: NSString(string: "svc"),
                kSecAttrAccount as String: Data("acct".utf8), kSecAttrGeneric as String: "generic text",
                kSecValueData as String: NSData(data: Data("pw".utf8)),
            ]
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccount as String: "acct",
            ]
            let found = try #require(attributes(query))
            // Apple keeps the type a blob attribute was given in (SecDbItem.c, copyBlob).
            #expect(found[kSecAttrGeneric as String] as? String == "generic text")
            #expect(found[kSecAttrAccount as String] as? Data == Data("acct".utf8))
            #expect(found[kSecAttrService as String] as? String == "svc")
        }
    }

    /// Code that stores kSecAttrAccount (or kSecAttrService, kSecAttrGeneric, …) as Data and lists its
    /// items expects Data back (Apple's blob attributes keep their type); matching compares the bytes
    /// whichever type the query uses.
    @Test("Blob attributes stored as Data come back as Data; matching compares the bytes")
    func dataAttributesKeepTheirType() throws {
        try withTempVault {
            let item: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Data("svc".utf8),
                kSecAttrAccount as String: Data("user@example".utf8), kSecAttrLabel as String: Data("label".utf8),
                kSecAttrGeneric as String: Data([0, 1, 2]), kSecValueData as String: Data("pw".utf8),
            ]
            #expect(SecItemAdd(item as CFDictionary, nil) == errSecSuccess)
            let all: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecMatchLimit as String: kSecMatchLimitAll,
                kSecReturnAttributes as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(all as CFDictionary, &result) == errSecSuccess)
            let items = try #require(result as? [[String: Any]])
            #expect(items.count == 1)
            let found = try #require(items.first)
            #expect(found[kSecAttrAccount as String] as? Data == Data("user@example".utf8))
            #expect(found[kSecAttrService as String] as? Data == Data("svc".utf8))
            #expect(found[kSecAttrLabel as String] as? Data == Data("label".utf8))
            #expect(found[kSecAttrGeneric as String] as? Data == Data([0, 1, 2]))
            // A query with the account as text finds the item stored with it as data, and the reverse.
            let byText: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                kSecAttrAccount as String: "user@example",
            ]
            #expect(attributes(byText) != nil)
            // Adding the same primary key as text is a duplicate.
            var asText = item
            asText[kSecAttrAccount as String] = "user@example"
            asText[kSecAttrService as String] = "svc"
            #expect(SecItemAdd(asText as CFDictionary, nil) == errSecDuplicateItem)
            // An update that gives the account as text makes it text.
            let change = [kSecAttrAccount as String: "user@example"] as CFDictionary
            #expect(SecItemUpdate(byText as CFDictionary, change) == errSecSuccess)
            #expect(try #require(attributes(byText))[kSecAttrAccount as String] as? String == "user@example")
        }
    }

    /// Swift's String == is canonical equivalence; Apple compares attribute bytes, and so do item ids.
    @Test("Canonically equivalent but different text does not match")
    func textMatchesAsBytes() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "caf\u{E9}", account: "a", password: "p") == errSecSuccess)
            #expect(addGenericPassword(service: "cafe\u{301}", account: "a", password: "q") == errSecSuccess)
            let query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "caf\u{E9}",
                kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true,
            ]
            var result: CFTypeRef?
            #expect(SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess)
            let found = try #require(result as? [Data])
            #expect(found == [Data("p".utf8)])
        }
    }
}

@Suite("Concurrency and the forms older snippets use")
struct SnippetFormTests {
    @Test("Many tasks add and read at once")
    func concurrentCalls() async throws {
        let temp = try TempVault()
        defer { try? FileManager.default.removeItem(atPath: temp.root) }
        let statuses = await VaultConnection.$override.withValue(temp.vault) {
            await withTaskGroup(of: (OSStatus, Data?).self) { group in
                for i in 0..<16 {
                    group.addTask {
                        let added = addGenericPassword(service: "svc", account: "a\(i)", password: "p\(i)")
                        let query: [String: Any] = [
                            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                            kSecAttrAccount as String: "a\(i)", kSecReturnData as String: true,
                        ]
                        var result: CFTypeRef?
                        let read = SecItemCopyMatching(query as CFDictionary, &result)
                        return (added == errSecSuccess ? read : added, result as? Data)
                    }
                }
                var collected: [(OSStatus, Data?)] = []
                for await status in group { collected.append(status) }
                return collected
            }
        }
        #expect(statuses.count == 16)
        #expect(statuses.allSatisfy { $0.0 == errSecSuccess && $0.1 != nil })
    }

    @Test("[String: AnyObject] queries, `as AnyObject` values, optionals and withUnsafeMutablePointer")
    func olderForms() throws {
        try withTempVault {
            let password: String? = "pw"
            let add: [String: AnyObject] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: "svc" as AnyObject,
                kSecAttrAccount as String: "acct" as AnyObject,
                kSecValueData as String: password!.data(using: .utf8)! as AnyObject,
                kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly,
            ]
            #expect(SecItemAdd(add as CFDictionary, nil) == errSecSuccess)

            let optionalData: Data? = Data("other".utf8)
            let second: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: "svc",
                kSecAttrAccount as String: "second", kSecValueData as String: optionalData as Any,
            ]
            #expect(SecItemAdd(second as CFDictionary, nil) == errSecSuccess)

            let query: [String: AnyObject] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: "svc" as AnyObject,
                kSecAttrAccount as String: "acct" as AnyObject,
                kSecReturnData as String: kCFBooleanTrue,
                kSecMatchLimit as String: kSecMatchLimitOne,
            ]
            var result: AnyObject?
            let status = withUnsafeMutablePointer(to: &result) {
                SecItemCopyMatching(query as CFDictionary, UnsafeMutablePointer($0))
            }
            #expect(status == noErr)
            #expect(result as? Data == Data("pw".utf8))

            // The protection class is a filter, and Apple's default is stored when none is given.
            let whenUnlocked: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrAccessible as String: kSecAttrAccessibleWhenUnlocked,
            ]
            #expect(SecItemCopyMatching(whenUnlocked as CFDictionary, nil) == errSecSuccess)
            let always: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrAccessible as String: kSecAttrAccessibleAlways,
            ]
            #expect(SecItemCopyMatching(always as CFDictionary, nil) == errSecItemNotFound)
        }
    }
}
