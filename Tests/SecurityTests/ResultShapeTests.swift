import Foundation
import Testing
import VaultTestSupport

@testable import Security

private func query(_ extra: [String: Any] = [:], service: String = "svc") -> [String: Any] {
    var query: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service]
    query.merge(extra) { _, new in new }
    return query
}

private func copy(_ query: [String: Any]) -> (OSStatus, CFTypeRef?) {
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    return (status, result)
}

@Suite("Results shaped as Apple's")
struct ResultShapeTests {
    @Test("kSecReturnData alone gives NSData")
    func dataAlone() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pw") == errSecSuccess)
            let (status, result) = copy(query([kSecReturnData as String: true]))
            #expect(status == errSecSuccess)
            #expect(result is NSData)
            #expect((result as! CFData) as Data == Data("pw".utf8))
        }
    }

    @Test("kSecReturnAttributes gives an NSDictionary with raw keys and NS values")
    func attributes() throws {
        try withTempVault {
            let before = Date()
            let added = addGenericPassword(
                service: "svc", account: "a", password: "pw",
                extra: [
                    kSecAttrLabel as String: "My label", kSecAttrGeneric as String: Data([1, 2, 3]),
                    kSecAttrCreator as String: 0x6162_6364, kSecAttrIsInvisible as String: true,
                    kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlock,
                ])
            #expect(added == errSecSuccess)
            let (status, result) = copy(query([kSecReturnAttributes as String: kCFBooleanTrue!]))
            #expect(status == errSecSuccess)
            let dictionary = try #require(result as? NSDictionary)
            #expect(dictionary.object(forKey: "acct") as? NSString == "a")
            #expect(dictionary.object(forKey: "svce") as? NSString == "svc")
            #expect(dictionary.object(forKey: "labl") as? NSString == "My label")
            #expect(dictionary.object(forKey: "agrp") as? NSString == "TEAMID.com.example.app")
            #expect(dictionary.object(forKey: "pdmn") as? NSString == "ck")
            #expect(dictionary.object(forKey: "gena") as? NSData == NSData(data: Data([1, 2, 3])))
            #expect(dictionary.object(forKey: "crtr") as? NSNumber == NSNumber(value: 0x6162_6364))
            #expect(dictionary.object(forKey: "invi") as? NSNumber == NSNumber(value: true))
            #expect(dictionary.object(forKey: "sync") as? NSNumber == NSNumber(value: false))
            let created = try #require(dictionary.object(forKey: "cdat") as? NSDate)
            #expect(dictionary.object(forKey: "mdat") is NSDate)
            #expect(abs(created.timeIntervalSince(before)) < 60)
            #expect(dictionary.object(forKey: "v_Data") == nil)
            #expect(dictionary.object(forKey: "class") == nil)

            // The Swift view Apple code takes of it.
            let swift = try #require(result as? [String: Any])
            #expect(swift[kSecAttrAccount as String] as? String == "a")
            #expect(swift[kSecAttrCreationDate as String] as? Date != nil)
        }
    }

    @Test("An item stored without kSecAttrAccessible reports Apple's default, kSecAttrAccessibleWhenUnlocked")
    func defaultAccessibility() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pw") == errSecSuccess)
            let (_, result) = copy(query([kSecReturnAttributes as String: true]))
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecAttrAccessible as String] as? String == kSecAttrAccessibleWhenUnlocked as String)
        }
    }

    @Test("Several return keys give one NSDictionary with v_Data and v_PersistentRef")
    func severalReturnKeys() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pw") == errSecSuccess)
            let (status, result) = copy(
                query([
                    kSecReturnData as String: true, kSecReturnAttributes as String: true,
                    kSecReturnPersistentRef as String: true,
                ]))
            #expect(status == errSecSuccess)
            let dictionary = try #require(result as? NSDictionary)
            #expect(dictionary.object(forKey: "v_Data") as? NSData == NSData(data: Data("pw".utf8)))
            #expect(dictionary.object(forKey: "v_PersistentRef") is NSData)
            #expect(dictionary.object(forKey: "acct") as? NSString == "a")

            let (_, dataAndReference) = copy(
                query([kSecReturnData as String: true, kSecReturnPersistentRef as String: true]))
            let pair = try #require(dataAndReference as? NSDictionary)
            #expect(pair.count == 2)
            #expect(pair.object(forKey: "v_Data") as? NSData == NSData(data: Data("pw".utf8)))
        }
    }

    @Test("kSecReturnRef on a password gives its class, attributes and secret")
    func returnRef() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pw") == errSecSuccess)
            let (_, result) = copy(query([kSecReturnRef as String: true]))
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecClass as String] as? String == "genp")
            #expect(dictionary[kSecAttrAccount as String] as? String == "a")
            #expect(dictionary[kSecValueData as String] as? Data == Data("pw".utf8))
        }
    }

    @Test("kSecMatchLimitAll gives an NSArray, even of one item; a number limits it")
    func limitAll() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pa") == errSecSuccess)
            let (status, one) = copy(
                query([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnAttributes as String: true]))
            #expect(status == errSecSuccess)
            let single = try #require(one as? NSArray)
            #expect(single.count == 1)
            #expect(single[0] is NSDictionary)

            #expect(addGenericPassword(service: "svc", account: "b", password: "pb") == errSecSuccess)
            #expect(addGenericPassword(service: "svc", account: "c", password: "pc") == errSecSuccess)
            let (_, all) = copy(query([kSecMatchLimit as String: kSecMatchLimitAll, kSecReturnData as String: true]))
            let secrets = try #require(all as? [Data])
            #expect(Set(secrets) == [Data("pa".utf8), Data("pb".utf8), Data("pc".utf8)])

            let (_, two) = copy(query([kSecMatchLimit as String: 2, kSecReturnAttributes as String: true]))
            #expect((two as? NSArray)?.count == 2)
            let (_, first) = copy(query([kSecMatchLimit as String: 1, kSecReturnAttributes as String: true]))
            #expect(first is NSDictionary)
        }
    }

    @Test("Without return keys only the status answers")
    func statusOnly() throws {
        try withTempVault {
            #expect(addGenericPassword(service: "svc", account: "a", password: "pa") == errSecSuccess)
            let (status, result) = copy(query())
            #expect(status == errSecSuccess)
            #expect(result == nil)
            #expect(copy(query(service: "other")).0 == errSecItemNotFound)
        }
    }

    @Test("A query with only kSecValuePersistentRef finds its item without kSecClass")
    func persistentReferenceOnly() throws {
        try withTempVault {
            var attributes = query([kSecAttrAccount as String: "a", kSecValueData as String: Data("pw".utf8)])
            attributes[kSecReturnPersistentRef as String] = true
            var added: CFTypeRef?
            #expect(SecItemAdd(attributes as CFDictionary, &added) == errSecSuccess)
            let reference = try #require(added as? Data)

            let (_, copied) = copy(query([kSecReturnPersistentRef as String: true]))
            #expect(copied as? Data == reference)

            var result: CFTypeRef?
            let byReference: [String: Any] = [
                kSecValuePersistentRef as String: reference, kSecReturnData as String: true,
            ]
            #expect(SecItemCopyMatching(byReference as CFDictionary, &result) == errSecSuccess)
            #expect(result as? Data == Data("pw".utf8))

            // The reference stays valid across an update of the primary key, and deletes its item.
            let changes = [kSecAttrAccount as String: "renamed"] as CFDictionary
            #expect(
                SecItemUpdate([kSecValuePersistentRef as String: reference] as CFDictionary, changes) == errSecSuccess)
            let (_, renamed) = copy([kSecValuePersistentRef as String: reference, kSecReturnAttributes as String: true])
            #expect((renamed as? [String: Any])?[kSecAttrAccount as String] as? String == "renamed")
            #expect(SecItemDelete([kSecValuePersistentRef as String: reference] as CFDictionary) == errSecSuccess)
            #expect(
                SecItemCopyMatching([kSecValuePersistentRef as String: reference] as CFDictionary, nil)
                    == errSecItemNotFound)
        }
    }

    @Test("SecItemAdd returns the new item as requested")
    func addResult() throws {
        try withTempVault {
            var attributes = query([kSecAttrAccount as String: "a", kSecValueData as String: Data("pw".utf8)])
            attributes[kSecReturnAttributes as String] = true
            attributes[kSecReturnData as String] = true
            var result: CFTypeRef?
            #expect(SecItemAdd(attributes as CFDictionary, &result) == errSecSuccess)
            let dictionary = try #require(result as? [String: Any])
            #expect(dictionary[kSecAttrAccount as String] as? String == "a")
            #expect(dictionary[kSecValueData as String] as? Data == Data("pw".utf8))

            var none: CFTypeRef?
            #expect(addGenericPassword(service: "svc", account: "b", password: "p") == errSecSuccess)
            #expect(SecItemAdd(query([kSecAttrAccount as String: "c"]) as CFDictionary, &none) == errSecSuccess)
            #expect(none == nil)
        }
    }
}
