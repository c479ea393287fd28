import Foundation
import Testing
import Vault
import VaultTestSupport

/// What a client of `Vault` makes for its API (a passphrase, a backup key), through the calls a client
/// has (scripts/test-consumer builds the same from another package), each failure a `VaultError`.
@Suite struct PublicKeyMaterialTests {
    struct NobodyToAsk: Error {}

    let client = try! Client(applicationIdentifier: "com.example.app")

    @Test func aProviderThatGivesNoPassphraseLeavesTheVaultLockedAndSaysSo() throws {
        try withTemporaryVault("provider") { t in
            let refusing = KeySource(passphrase: { _ in throw NobodyToAsk() }, limits: .minimum)
            // A new vault: nothing is made, and the message names the key file and the provider's error.
            let creating = #expect(throws: VaultError.self) {
                _ = try Vault.open(at: t.path, client: client, createIfMissing: true, keySource: refusing)
            }
            #expect(creating?.status == .interactionNotAllowed)
            #expect(creating?.message.contains("new passphrase for \(t.path)/master.key") == true)
            #expect(creating?.message.contains("NobodyToAsk") == true, "\(String(describing: creating))")
            #expect(!FileManager.default.fileExists(atPath: t.path + "/master.key"))

            let source = KeySource(
                passphrase: { _ in try SecureBytes(copyingSecret: Array("correct horse".utf8)) }, limits: .minimum)
            let vault = try Vault.open(at: t.path, client: client, createIfMissing: true, keySource: source)
            let key = try ItemKey(service: "db", account: "app")
            try vault.set(Data("s3cret".utf8), for: key)
            // An existing vault opens locked, as with no passphrase: its item says so, never "not found".
            var locked = refusing
            locked.usesUnlockCache = false
            let reading = #expect(throws: VaultError.self) {
                _ = try Vault.open(at: t.path, client: client, keySource: locked).data(for: key)
            }
            #expect(reading?.status == .interactionNotAllowed)
            #expect(reading?.message.contains("is locked") == true, "\(String(describing: reading))")
        }
    }

    @Test func secretsMovedIntoSecureMemoryLeaveNoCopyInTheArray() throws {
        var bytes = Array("passphrase".utf8)
        let moved = try SecureBytes(wipingSecret: &bytes)
        #expect(bytes.isEmpty)
        #expect(moved.constantTimeEquals(Array("passphrase".utf8)))
        let copied = try SecureBytes(copyingSecret: Array("passphrase".utf8))
        #expect(copied == moved)
        // Each in memory of its own (guard pages right after it), not on a page shared with keys.
        let pages = [moved, copied].map { $0.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) >> 12 } }
        #expect(pages[0] != pages[1])
        #expect("\(copied)".contains("redacted"))
    }

    @Test func aMissingBackupKeyFileIsNamedWithTheWayToMakeOne() throws {
        try withTemporaryVault("backup-key") { t in
            let path = t.root + "/absent.key"
            let error = #expect(throws: VaultError.self) { _ = try BackupKey.keyFile(at: path) }
            #expect(error?.status == .io)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("/dev/urandom") == true, "\(String(describing: error))")
        }
    }
}
