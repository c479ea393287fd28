import Foundation
import Synchronization
import Testing
import Vault
import VaultTestSupport

@testable import Security

/// Runs the SecurityExample executable with the vault variables of `environment` (and none inherited).
private func runExample(_ environment: [String: String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = builtProduct("SecurityExample")
    var inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("VAULT_") }
    inherited.merge(environment) { _, new in new }
    process.environment = inherited
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

private func groups(inVault path: String) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: path + "/groups").filter { !$0.hasPrefix(".") }.sorted()
}

@Suite("Which vault and which client: the environment")
struct EnvironmentTests {
    @Test("The example, written as for iOS, runs on a vault that VAULT_DIR names, created on first use")
    func exampleWithVaultDirectory() throws {
        try withTemporaryDirectory("security-env") { directory in
            let root = directory.path
            let first = try runExample(["VAULT_DIR": root + "/vault"])
            #expect(first.status == 0, "\(first.output)")
            #expect(first.output.contains("ok"))
            // Without an identity in the environment the client is the executable's name.
            #expect(try groups(inVault: root + "/vault") == ["SecurityExample"])
            // The device id survives across processes.
            let second = try runExample(["VAULT_DIR": root + "/vault"])
            let id = { (text: String) in text.split(separator: "\n").first { $0.hasPrefix("device id: ") } }
            #expect(id(first.output) != nil && id(first.output) == id(second.output))
        }
    }

    @Test("VAULT_APP_ID and VAULT_ACCESS_GROUPS: adds go to the first listed group")
    func appIdentifierAndGroups() throws {
        try withTemporaryDirectory("security-env") { directory in
            let root = directory.path
            let run = try runExample([
                "VAULT_DIR": root + "/vault", "VAULT_APP_ID": "TEAMID.com.example.cli",
                "VAULT_ACCESS_GROUPS": "TEAMID.shared, TEAMID.other",
            ])
            #expect(run.status == 0, "\(run.output)")
            #expect(try groups(inVault: root + "/vault") == ["TEAMID.shared"])
        }
    }

    @Test("VAULT_ENTITLEMENTS: a JSON file with Apple's entitlement keys wins over VAULT_APP_ID")
    func entitlementsFile() throws {
        try withTemporaryDirectory("security-env") { directory in
            let root = directory.path
            let file = root + "/entitlements.json"
            let json =
                #"{"application-identifier": "TEAMID.com.example.app", "keychain-access-groups": ["TEAMID.group"]}"#
            try Data(json.utf8).write(to: URL(fileURLWithPath: file))
            let run = try runExample([
                "VAULT_DIR": root + "/vault", "VAULT_ENTITLEMENTS": file, "VAULT_APP_ID": "ignored.app",
            ])
            #expect(run.status == 0, "\(run.output)")
            #expect(try groups(inVault: root + "/vault") == ["TEAMID.group"])

            let broken = try runExample(["VAULT_DIR": root + "/vault", "VAULT_ENTITLEMENTS": root + "/missing.json"])
            #expect(broken.status == 1)
            #expect(broken.output.contains("-50"))
        }
    }

    @Test("The executable's name becomes a valid access-group name")
    func fallbackIdentifier() {
        #expect(VaultConnection.sanitizedGroupName("my tool") == "my-tool")
        #expect(VaultConnection.sanitizedGroupName(".hidden") == "hidden")
        #expect(VaultConnection.sanitizedGroupName("...") == "app")
        #expect(VaultConnection.sanitizedGroupName("Ünïcode.app") == "-n-code.app")
        #expect(VaultConnection.sanitizedGroupName(String(repeating: "a", count: 300)).count == 200)
        #expect(!VaultConnection.fallbackApplicationIdentifier().isEmpty)
    }
}

@Suite("The cached vault follows the environment")
struct EnvironmentChangeTests {
    @Test("One cached handle, re-resolved when VAULT_DIR changes")
    func reResolution() throws {
        try withTemporaryDirectory("security-env") { directory in
            let root = directory.path
            // An environment of our own: setenv would race with the other tests' reads of environ.
            let environment = Mutex(["VAULT_APP_ID": "TEAMID.com.example.tests", "VAULT_DIR": root + "/one"])
            let lookup = { (name: String) in environment.withLock { $0[name] } }

            let first = try #require(try VaultConnection.current(creating: true, environment: lookup))
            #expect(try VaultConnection.current(creating: true, environment: lookup) === first)
            #expect(first.path == root + "/one")
            #expect(first.client.applicationIdentifier == "TEAMID.com.example.tests")
            VaultConnection.$override.withValue(first) {
                #expect(addGenericPassword(service: "svc", account: "a", password: "one") == errSecSuccess)
            }
            #expect(FileManager.default.fileExists(atPath: root + "/one/groups/TEAMID.com.example.tests"))

            environment.withLock { $0["VAULT_DIR"] = root + "/two" }
            let second = try #require(try VaultConnection.current(creating: true, environment: lookup))
            #expect(second !== first)
            #expect(second.path == root + "/two")
            #expect(FileManager.default.fileExists(atPath: root + "/two/VAULT"))

            environment.withLock { $0["VAULT_ACCESS_GROUPS"] = "TEAMID.shared" }
            let third = try #require(try VaultConnection.current(creating: true, environment: lookup))
            #expect(third.client.defaultGroup?.rawValue == "TEAMID.shared")
        }
    }
}

@Suite("Reading does not create")
struct ReadingDoesNotCreateTests {
    /// Before: the first SecItemCopyMatching of a mistyped VAULT_DIR made an empty vault there.
    @Test("A read of a vault that does not exist is errSecItemNotFound and creates nothing; an add creates it")
    func readsCreateNothing() throws {
        try withTemporaryDirectory("security-env") { directory throws in
            let root = directory.path
            let path = root + "/typo/vault"
            let environment = ["VAULT_APP_ID": "TEAMID.com.example.tests", "VAULT_DIR": path]
            #expect(try VaultConnection.current(creating: false, environment: { environment[$0] }) == nil)
            #expect(!FileManager.default.fileExists(atPath: root + "/typo"))
            #expect(try VaultConnection.current(creating: true, environment: { environment[$0] }) != nil)
            #expect(FileManager.default.fileExists(atPath: path + "/VAULT"))
        }
    }

    /// A mistyped path must not get a fresh vault under a production key.
    @Test("With an external key nothing creates a vault implicitly: errSecNoSuchKeychain naming the path")
    func anExternalKeyNeverCreates() throws {
        try withTemporaryDirectory("security-env") { directory in
            let root = directory.path
            let keyFile = root + "/vault.key"
            try Data(repeating: 7, count: 32).write(to: URL(fileURLWithPath: keyFile))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFile)
            let path = root + "/vault"
            let environment = [
                "VAULT_APP_ID": "TEAMID.com.example.tests", "VAULT_DIR": path, "VAULT_KEY_FILE": keyFile,
            ]
            do throws(VaultError) {
                _ = try VaultConnection.current(creating: false, environment: { environment[$0] })
                Issue.record("a read of a missing vault under an external key was \"not found\"")
            } catch {
                #expect(error.status.rawValue == errSecNoSuchKeychain)
                #expect(error.message.contains(path))
            }
            do throws(VaultError) {
                _ = try VaultConnection.current(creating: true, environment: { environment[$0] })
                Issue.record("a vault was created implicitly under an external key")
            } catch {
                #expect(error.status.rawValue == errSecNoSuchKeychain)
                #expect(error.message.contains(path))
            }
            #expect(!FileManager.default.fileExists(atPath: path))
        }
    }
}

@Suite("A vault that cannot be used is never \"not found\"")
struct UnusableVaultTests {
    @Test("A master key readable by others is refused with errSecWrPerm")
    func looseMasterKey() throws {
        try TempVault.with { temp in
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: temp.path + "/master.key")
            let environment = ["VAULT_APP_ID": "TEAMID.com.example.tests", "VAULT_DIR": temp.path]
            #expect(throws: VaultError.self) {
                try VaultConnection.current(creating: true, environment: { environment[$0] })
            }
            do throws(VaultError) {
                _ = try VaultConnection.current(creating: true, environment: { environment[$0] })
            } catch {
                #expect(error.status.rawValue == errSecWrPerm)
                #expect(error.message.contains(temp.path))
            }
        }
    }

    @Test("An entitlements file that cannot be read is errSecParam")
    func brokenEntitlements() throws {
        let environment = ["VAULT_ENTITLEMENTS": "/nonexistent/entitlements.json", "VAULT_DIR": "/nonexistent/vault"]
        do {
            _ = try VaultConnection.current(creating: true, environment: { environment[$0] })
            Issue.record("a client was made from a missing entitlements file")
        } catch {
            #expect(error.status.rawValue == errSecParam)
        }
    }
}
