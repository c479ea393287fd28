import Foundation
import Testing
import VaultArchive
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

struct Credentials: Codable, Equatable {
    var username: String
    var password: String
    var created: Date
    var tags: [String]
}

@Suite struct ConvenienceTests {
    @Test func setGetRemoveContainsAllKeys() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "api", account: "token")
            #expect(try vault.data(for: key) == nil)
            #expect(try vault.contains(key) == false)
            try vault.set("s3cret", for: key)
            #expect(try vault.string(for: key) == "s3cret")
            try vault.set(Data([0, 1, 2, 0]), for: key)  // an update, not a duplicate
            #expect(try vault.data(for: key) == Data([0, 1, 2, 0]))
            #expect(status { _ = try vault.string(for: key) } == .success)
            try vault.set(Data([0xff, 0xfe]), for: key)
            #expect(status { _ = try vault.string(for: key) } == .decode)
            let credentials = Credentials(
                username: "alice", password: "pw", created: Date(timeIntervalSince1970: 1_700_000_000),
                tags: ["a", "b"])
            let other = try ItemKey(service: "api", account: "credentials")
            try vault.set(credentials, for: other)
            #expect(try vault.value(Credentials.self, for: other) == credentials)
            #expect(status { _ = try vault.value([String].self, for: other) } == .decode)
            #expect(try vault.allKeys().map(\.account) == ["credentials", "token"])
            #expect(try vault.contains(key))
            #expect(try vault.remove(key) == true)
            #expect(try vault.remove(key) == false)
            #expect(try vault.data(for: key) == nil)
        }
    }

    @Test func setStoresTheAccessibility() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("x", for: try ItemKey(service: "s"), accessibility: .whenUnlockedThisDeviceOnly)
            let item = try vault.copyMatching(.genericPassword(service: "s"))[0]
            #expect(item.attributes.accessible == .whenUnlockedThisDeviceOnly)
        }
    }

    @Test func modifyIsAtomicReadModifyWrite() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "counter")
            for _ in 0..<10 {
                try vault.modify(key) { current in
                    let value = current.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                    return Data(String(value + 1).utf8)
                }
            }
            #expect(try vault.string(for: key) == "10")
            try vault.modify(key) { _ in nil }
            #expect(try vault.data(for: key) == nil)
        }
    }

    @Test func keysAreValidated() {
        #expect(status { _ = try ItemKey(service: String(repeating: "x", count: 4097)) } == .param)
    }

    @Test func notFoundIsNilButDamageIsAnError() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let key = try ItemKey(service: "svc", account: "a")
            try vault.set("x", for: key)
            let directory = t.path + "/groups/com.example.app"
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".item") })
            var bytes = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + file))
            bytes[bytes.count - 1] ^= 1
            try bytes.write(to: URL(fileURLWithPath: directory + "/" + file))
            let error = #expect(throws: VaultError.self) { _ = try vault.data(for: key) }
            #expect(error?.status == .decode)
            #expect(error?.message.contains(file) == true)
            // A scan that meets only the damaged file says so rather than "not found".
            #expect(status { _ = try vault.copyMatching(.genericPassword(service: "svc", limit: .all)) } == .decode)
            // Adding over a damaged item is refused too: it is never silently replaced.
            #expect(
                status { try vault.add(.genericPassword, attributes: genp("svc", "a"), data: Data("y")) } == .decode)
        }
    }
}

/// The seeds' usage patterns (keychain code from Apple platforms), ported to the Swift API.
@Suite struct SeedPatternTests {
    let service = "com.example.app.settings"

    func save(_ vault: Vault, _ dictionary: [String: String]) throws {
        // delete then add, with service used as both service and account, after-first-unlock
        _ = try? vault.delete(.genericPassword(service: service, account: service))
        var attributes = genp(service, service)
        attributes.accessible = .afterFirstUnlock
        try vault.add(.genericPassword, attributes: attributes, data: VaultArchive.encodeData(dictionary))
    }

    func load(_ vault: Vault) throws -> [String: String]? {
        do {
            let item = try vault.copyMatching(.genericPassword(service: service, account: service), returning: .data)
            return try VaultArchive.decode([String: String].self, from: item[0].data!)
        } catch let error as VaultError where error.status == .itemNotFound {
            return nil
        }
    }

    @Test func saveLoadDelete() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            #expect(try load(vault) == nil)
            try save(vault, ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"])
            #expect(try load(vault) == ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"])
            try save(vault, ["com.app.uuid": "other"])
            #expect(try load(vault) == ["com.app.uuid": "other"])
            #expect(
                try vault.copyMatching(.genericPassword(service: service))[0].attributes.accessible == .afterFirstUnlock
            )
            try vault.delete(.genericPassword(service: service, account: service))
            #expect(try load(vault) == nil)
        }
    }

    @Test func getOrCreateUUIDWithItsFirstInstallFlag() throws {
        try withTemporaryVault { t in
            let first = try t.open().deviceIdentifier()
            #expect(first.created)
            let second = try t.open().deviceIdentifier()
            #expect(!second.created)
            #expect(second.identifier == first.identifier)
            // "Reinstall": the program is gone, the vault is not; a new client of the same app finds it.
            let reinstalled = try Vault.open(at: t.path, client: try Client(applicationIdentifier: "com.example.app"))
            #expect(try reinstalled.deviceIdentifier() == (first.identifier, false))
            // Other keys are other identifiers.
            let other = try reinstalled.deviceIdentifier(for: "instance-2")
            #expect(other.created)
            #expect(other.identifier != first.identifier)
            // Stored readable, as the UUID's text, never leaving the device.
            let item = try reinstalled.copyMatching(
                .genericPassword(service: Vault.deviceIdentifierService, account: "vault"), returning: .data)[0]
            #expect(item.data == Data(first.identifier.uuidString.utf8))
            #expect(item.attributes.accessible == .afterFirstUnlockThisDeviceOnly)
        }
    }

    @Test func threadsRacingForTheIdentifierAgree() async throws {
        try await withTemporaryVault { t in
            _ = try t.open()
            let results = try await withThrowingTaskGroup(of: (UUID, Bool).self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        let r = try t.open().deviceIdentifier(for: "race")
                        return (r.identifier, r.created)
                    }
                }
                var all: [(UUID, Bool)] = []
                for try await r in group { all.append(r) }
                return all
            }
            #expect(Set(results.map(\.0)).count == 1)
            #expect(results.filter(\.1).count == 1)
        }
    }
}

@Suite(.serialized) struct MultiProcessTests {
    @Test func eightProcessesUpsertingOverlappingKeysAndAddingDistinctOnes() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let app = "com.example.app"
            var processes: [Helper] = []
            for writer in 0..<8 {
                processes.append(try Helper(["upsert", t.path, app, "250", "10", "w\(writer)"]))
            }
            for writer in 0..<8 {
                processes.append(try Helper(["add", t.path, app, "250", "w\(writer)"]))
            }
            for process in processes {
                let result = process.finish()
                #expect(result.status == 0, "helper failed: \(result.errors)")
            }
            let shared = try vault.copyMatching(.genericPassword(service: "shared", limit: .all))
            #expect(shared.count == 10)
            #expect(Set(shared.map(\.attributes.account)).count == 10)
            let distinct = try vault.copyMatching(.genericPassword(service: "distinct", limit: .all))
            #expect(distinct.count == 2000)
            #expect(Set(distinct.map(\.attributes.account)).count == 2000)
        }
    }

    @Test func eightProcessesRacingForTheDeviceIdentifierAgree() throws {
        try withTemporaryVault { t in
            _ = try t.open()
            let processes = try (0..<8).map { _ in try Helper(["device-id", t.path, "com.example.app", "vault"]) }
            var identifiers = Set<String>()
            var created = 0
            for process in processes {
                let result = process.finish()
                #expect(result.status == 0, "\(result.errors)")
                let fields = result.output.split(separator: " ").map {
                    $0.trimmingCharacters(in: .whitespacesAndNewlines)
                }
                guard fields.count == 2 else { continue }
                identifiers.insert(fields[0])
                if fields[1] == "true" { created += 1 }
            }
            #expect(identifiers.count == 1)
            #expect(created == 1)
        }
    }

    @Test func processesIncrementingACounterLoseNoUpdate() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let processes = try (0..<4).map { _ in try Helper(["increment", t.path, "com.example.app", "100"]) }
            for process in processes {
                let result = process.finish()
                #expect(result.status == 0, "\(result.errors)")
            }
            #expect(try vault.string(for: try ItemKey(service: "counter", account: "value")) == "400")
        }
    }
}

@Suite struct ClientEnvironmentTests {
    @Test func entitlementsFileWins() throws {
        try withTemporaryVault { t in
            let file = t.root + "/entitlements.json"
            try Data(#"{"application-identifier": "TEAM.app", "keychain-access-groups": ["TEAM.shared"]}"#.utf8)
                .write(to: URL(fileURLWithPath: file))
            let client = try Client.fromEnvironment(
                ["VAULT_ENTITLEMENTS": file, "VAULT_APP_ID": "ignored"], fallbackApplicationIdentifier: "fallback")
            #expect(client.applicationIdentifier == "TEAM.app")
            #expect(client.accessGroups.map(\.rawValue) == ["TEAM.shared", "TEAM.app"])
        }
    }

    @Test func variablesThenFallback() throws {
        let client = try Client.fromEnvironment(
            ["VAULT_APP_ID": "app", "VAULT_ACCESS_GROUPS": "g1, g2"], fallbackApplicationIdentifier: "fallback")
        #expect(client.accessGroups.map(\.rawValue) == ["g1", "g2", "app"])
        let fallback = try Client.fromEnvironment([:], fallbackApplicationIdentifier: "my-service")
        #expect(fallback.accessGroups.map(\.rawValue) == ["my-service"])
    }

    @Test func aBadEntitlementsFileIsAParameterErrorNamingIt() throws {
        let error = #expect(throws: VaultError.self) {
            _ = try Client.fromEnvironment(
                ["VAULT_ENTITLEMENTS": "/nonexistent.json"], fallbackApplicationIdentifier: nil)
        }
        #expect(error?.status == .param)
        #expect(error?.message.contains("/nonexistent.json") == true)
    }
}

@Suite struct LockedVaultTests {
    @Test func classKeysDecideWhatALockedVaultCanRead() throws {
        try withTemporaryVault { t in
            defer {
                _ = try? Vault.lock(at: t.path)
            }
            let client = try Client(applicationIdentifier: "com.example.app")
            let right = KeySource.passphrase([1, 2])
            let vault = try Vault.create(at: t.path, client: client, keySource: right)
            try vault.set("always", for: try ItemKey(service: "always"), accessibility: .always)
            try vault.set("afu", for: try ItemKey(service: "afu"), accessibility: .afterFirstUnlock)
            try vault.set("wu", for: try ItemKey(service: "wu"), accessibility: .whenUnlockedThisDeviceOnly)
            try vault.add(.genericPassword, attributes: genp("default", ""), data: Data("apple's default: ak"))

            let locked = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(try locked.string(for: try ItemKey(service: "always")) == "always")
            for service in ["afu", "wu", "default"] {
                #expect(status { _ = try locked.data(for: try ItemKey(service: service)) } == .interactionNotAllowed)
            }
            // Never "not found" for a locked item, and a query spanning locked items says locked...
            #expect(
                status { _ = try locked.copyMatching(Query(itemClass: .genericPassword, limit: .all)) }
                    == .interactionNotAllowed)
            #expect(status { _ = try locked.allKeys() } == .interactionNotAllowed)
            // ...unless it is filtered to an unlocked class.
            var onlyAlways = Query(itemClass: .genericPassword, limit: .all)
            onlyAlways.attributes.accessible = .always
            #expect(try locked.copyMatching(onlyAlways).map(\.attributes.service) == ["always"])
            // Writes of a locked class are refused, an existing key is still a duplicate, nothing changes.
            #expect(
                status { try locked.set("x", for: try ItemKey(service: "new-wu"), accessibility: .whenUnlocked) }
                    == .interactionNotAllowed)
            #expect(
                status { try locked.add(.genericPassword, attributes: genp("afu", ""), data: Data("x")) }
                    == .interactionNotAllowed)
            var alwaysDuplicate = genp("wu", "")
            alwaysDuplicate.accessible = .always
            #expect(
                status { try locked.add(.genericPassword, attributes: alwaysDuplicate, data: Data("x")) }
                    == .duplicateItem)

            // A wrong passphrase is authFailed; the right one reads everything.
            let wrong = KeySource.passphrase([9], limits: .moderate)
            #expect(status { _ = try Vault.open(at: t.path, client: client, keySource: wrong) } == .authFailed)
            let unlocked = try Vault.open(at: t.path, client: client, keySource: right)
            #expect(try unlocked.string(for: try ItemKey(service: "wu")) == "wu")

            // After `unlock`, other handles read everything; after `lock`, WhenUnlocked items are locked again.
            try Vault.unlock(at: t.path, keySource: right, timeoutSeconds: 60)
            #expect(
                try Vault.open(at: t.path, client: client, keySource: KeySource()).string(
                    for: try ItemKey(service: "wu"))
                    == "wu")
            try Vault.lock(at: t.path)
            let afterLock = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(try afterLock.string(for: try ItemKey(service: "afu")) == "afu")
            #expect(status { _ = try afterLock.data(for: try ItemKey(service: "wu")) } == .interactionNotAllowed)
        }
    }
}

@Suite struct SecretsInErrorsTests {
    struct Payload: Codable {
        var secret: String
    }

    /// An encoding failure names where and why, never the value: EncodingError carries the value.
    @Test func anArchiveFailureDoesNotPutTheSecretInTheMessage() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            let marker = "TOP-SECRET-MARKER-"
            let payload = Payload(secret: marker + String(repeating: "x", count: 5 << 20))  // over the 4 MiB limit
            let error = #expect(throws: VaultError.self) {
                try vault.set(payload, for: try ItemKey(service: "big"))
            }
            #expect(error?.status == .param)
            #expect(error?.message.contains("exceeds the size limit") == true)
            #expect(error?.message.contains(marker) == false)
            #expect(error?.cause == nil)
            #expect(error.map { "\($0)" }?.contains(marker) == false)
        }
    }

    /// `secureSecret(for:)` (what `vault get` reads with) finds what `copyMatching` finds, the secret in
    /// secure memory and the item without it; a miss is `itemNotFound`, a partial key `param`.
    @Test func aSecretReadIntoSecureMemoryIsTheOneCopyMatchingFinds() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("s3cret", for: try ItemKey(service: "svc", account: "acct"))
            let query = Query.genericPassword(service: "svc", account: "acct")
            let found = try vault.secureSecret(for: query)
            #expect(found.secret.unprotectedCopy() == Array("s3cret".utf8))
            #expect(found.item.data == nil && found.item.attributes.account == "acct")
            #expect(
                found.item.persistentReference
                    == (try vault.copyMatching(query, returning: [.attributes]))[0]
                    .persistentReference)
            #expect(
                status { _ = try vault.secureSecret(for: .genericPassword(service: "svc", account: "x")) }
                    == .itemNotFound)
            var partial = query
            partial.attributes.account = nil
            #expect(status { _ = try vault.secureSecret(for: partial) } == .param)
        }
    }
}
