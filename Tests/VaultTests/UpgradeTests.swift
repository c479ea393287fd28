import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

/// `Vault.upgrade`: a format-1 vault becomes format 2 only when asked, crash-safe as a rekey.
@Suite struct UpgradeTests {
    let client = try! Client(applicationIdentifier: "vault", accessGroups: ["com.example.app", "team.shared"])

    /// The expected contents of the fixture (made by `vault init` and `vault put` of the format-1 code,
    /// 2026-12-01; `postgres` was put twice, so it has a generation record).
    let expected: [(service: String, account: String, group: String, value: String)] = [
        ("postgres", "app", "com.example.app", "v2"), ("api", "ci", "com.example.app", "api-token"),
        ("cache", "key", "team.shared", "shared"),
    ]

    /// A copy of `Fixtures/v1-vault` at `path`, with the modes a vault has (git keeps none of them).
    func copyFixture(to path: String) throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/v1-vault").path
        try FileManager.default.copyItem(atPath: fixture, toPath: path)
        let walker = FileManager.default.enumerator(atPath: path)!
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        while let relative = walker.nextObject() as? String {
            let full = path + "/" + relative
            let attributes = try FileManager.default.attributesOfItem(atPath: full)
            guard attributes[.type] as? FileAttributeType != .typeSymbolicLink else { continue }
            let isDirectory = attributes[.type] as? FileAttributeType == .typeDirectory
            try FileManager.default.setAttributes([.posixPermissions: isDirectory ? 0o700 : 0o600], ofItemAtPath: full)
        }
    }

    func check(_ vault: Vault, _ context: String = "") throws {
        for item in expected {
            let key = try ItemKey(service: item.service, account: item.account, group: try AccessGroup(item.group))
            #expect(try vault.data(for: key) == Data(item.value.utf8), "\(item.service) \(context)")
        }
    }

    @Test func aFormatOneVaultFromTheFixtureOpensAndUpgrades() throws {
        try withTemporaryVault("upgrade") { t in
            try copyFixture(to: t.path)
            let old = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(old.formatVersion == 1)
            try check(old, "as format 1")
            try old.upgrade(keySource: KeySource())
            let upgraded = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(upgraded.formatVersion == 2)
            try check(upgraded, "as format 2")
            #expect(try t.bytes("VAULT")[4] == 2)
            #expect(try t.mode("VAULT") == 0o644)
            for group in ["com.example.app", "team.shared"] {
                #expect(FileManager.default.fileExists(atPath: t.file("groups/\(group)/group.key")))
                for name in try t.entries("groups/\(group)") where name.hasSuffix(".item") {
                    #expect(try t.bytes("groups/\(group)/\(name)")[4] == 2, "\(name)")
                }
            }
            // Writes and the rollback check work on the new format; a second upgrade changes nothing.
            let key = try ItemKey(service: "postgres", account: "app", group: try AccessGroup("com.example.app"))
            try upgraded.set(Data("v3".utf8), for: key)
            #expect(
                try Vault.open(at: t.path, client: client, keySource: KeySource()).data(for: key) == Data("v3".utf8))
            let again = #expect(throws: VaultError.self) { try upgraded.upgrade(keySource: KeySource()) }
            #expect(again?.status == .duplicateVault)
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: t.path).filter {
                $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
            }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    /// Each system call of an upgrade failing in turn (the state a crash there leaves): the next open
    /// has the vault as format 1 or 2, with every item, and nothing left over.
    @Test func anUpgradeFailingAtAnyStepLeavesEitherFormatWithEveryItem() throws {
        let calls = try withTemporaryVault("upgrade-probe") { probe in
            try copyFixture(to: probe.path)
            let vault = try Vault.open(at: probe.path, client: client, keySource: KeySource())
            return try systemCalls(of: { try vault.upgrade(keySource: KeySource()) }).calls
        }
        var steps = 0
        var upgraded = 0
        for (operation, count) in calls where count > 0 {
            let occurrences =
                count <= 30 ? Array(1...count) : stride(from: 1, through: count, by: count / 15).map { $0 }
            for occurrence in occurrences {
                try withTemporaryVault("upgrade") { t in
                    try copyFixture(to: t.path)
                    func attempt() throws {
                        let vault = try Vault.open(at: t.path, client: client, keySource: KeySource())
                        let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                        _ = try? FaultInjection.withPlan(plan) { try vault.upgrade(keySource: KeySource()) }
                    }
                    try attempt()
                    steps += 1
                    let reopened = try Vault.open(at: t.path, client: client, keySource: KeySource())
                    try check(reopened, "\(operation) #\(occurrence)")
                    if reopened.formatVersion == 2 { upgraded += 1 }
                    let leftovers = try FileManager.default.contentsOfDirectory(atPath: t.path).filter {
                        $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
                    }
                    #expect(leftovers.isEmpty, "\(operation) #\(occurrence): \(leftovers)")
                }
            }
        }
        #expect(steps > 20)
        #expect(upgraded > 0 && upgraded < steps)
    }
}
