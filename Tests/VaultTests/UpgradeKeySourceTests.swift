import Foundation
import Testing
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

/// The upgrade of the two vaults whose key is not a plain `master.key`: one whose key is in an
/// external key file (the journal is version 2 and names that file, which the upgrade must leave alone)
/// and one whose `master.key` is wrapped under a passphrase (with `always.key`). Each keeps its items,
/// and opens with the same key file or passphrase afterwards, whatever step the upgrade stopped at.
@Suite struct UpgradeKeySourceTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case keyFile, passphrase
        var testDescription: String { rawValue }
    }

    let client = try! Client(applicationIdentifier: "com.example.app", accessGroups: ["team.shared"])

    /// The items each vault holds: two groups, and each protection class the CLI and `vault uuid` use.
    let expected: [(service: String, account: String, group: String, value: String, accessibility: Accessibility)] = [
        ("postgres", "app", "com.example.app", "pg-secret", .whenUnlocked),
        ("api", "ci", "com.example.app", "api-token", .afterFirstUnlock),
        ("cache", "key", "team.shared", "shared", .always),
    ]

    /// The key source of `kind` for the vault in `t`: the key file beside the vault, or the passphrase.
    func keySource(_ kind: Kind, _ t: TemporaryVault) -> KeySource {
        switch kind {
        case .keyFile: return KeySource(keyFile: t.root + "/vault.key")
        case .passphrase: return .passphrase(FormatOneFixture.passphraseText)
        }
    }

    /// The format-1 vault of `kind` in `t` (a committed fixture) holding `expected` (each put twice, so
    /// that it has a generation record).
    func makeFormatOneVault(_ kind: Kind, _ t: TemporaryVault) throws {
        switch kind {
        case .keyFile: try FormatOneFixture.keyFile.copy(to: t.path, keyFilePath: t.root + "/vault.key")
        case .passphrase: try FormatOneFixture.passphrase.copy(to: t.path)
        }
        #expect(try FormatOneFixture.version(at: t.path) == 1)
    }

    /// What an open does before the upgrade: the recovery of an interrupted one, then (for a vault
    /// still in format 1) `needsUpgrade`. The format the vault is in afterwards.
    func recover(_ kind: Kind, _ t: TemporaryVault) throws -> UInt8 {
        do {
            _ = try VaultStore.open(at: t.path, keySource: keySource(kind, t))
        } catch {
            #expect(error.code == .needsUpgrade, "\(error)")
        }
        return try FormatOneFixture.version(at: t.path)
    }

    func check(_ vault: Vault, _ context: String) throws {
        for item in expected {
            let key = try ItemKey(service: item.service, account: item.account, group: try AccessGroup(item.group))
            #expect(try vault.data(for: key) == Data(item.value.utf8), "\(item.service) \(context)")
        }
    }

    /// What a key of `kind` leaves in the vault directory: a key-file vault has no `master.key`, a
    /// passphrase vault a wrapped one (124 bytes) and `always.key`.
    func checkKeyFiles(_ kind: Kind, _ t: TemporaryVault, _ context: String) throws {
        let entries = Set(try t.entries(""))
        switch kind {
        case .keyFile:
            #expect(!entries.contains("master.key") && !entries.contains("always.key"), "\(context): \(entries)")
            #expect(try t.bytes("../vault.key").count == 32, "\(context)")
        case .passphrase:
            #expect(try t.bytes("master.key").count == 124, "\(context)")
            #expect(try t.bytes("always.key").count == 64, "\(context)")
        }
    }

    /// The key that did not make the vault: another key file, or another passphrase.
    func wrongKeySource(_ kind: Kind, _ t: TemporaryVault) throws -> KeySource {
        switch kind {
        case .keyFile:
            let other = t.root + "/other.key"
            try Data((0..<32).map { UInt8($0) }).write(to: URL(fileURLWithPath: other))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: other)
            return KeySource(keyFile: other)
        case .passphrase: return .passphrase("not the passphrase")
        }
    }

    @Test(arguments: Kind.allCases)
    func anUpgradeKeepsTheItemsAndTheKey(_ kind: Kind) throws {
        try withTemporaryVault("upgrade-\(kind.rawValue)") { t in
            try makeFormatOneVault(kind, t)
            let key = try ItemKey(service: "postgres", account: "app", group: try AccessGroup("com.example.app"))
            let masterKeyBefore = kind == .passphrase ? try t.bytes("master.key") : try t.bytes("../vault.key")
            let upgraded = try Vault.open(at: t.path, client: client, keySource: keySource(kind, t))
            #expect(upgraded.upgradedOnOpen)
            #expect(try t.bytes("VAULT")[4] == 2)
            try check(upgraded, "after the upgrade")
            try checkKeyFiles(kind, t, "after the upgrade")
            // The key itself did not change: the same master.key bytes (no passwd, no rekey), the same
            // key file, untouched.
            let masterKeyAfter = kind == .passphrase ? try t.bytes("master.key") : try t.bytes("../vault.key")
            #expect(masterKeyAfter == masterKeyBefore)
            for group in ["com.example.app", "team.shared"] {
                #expect(FileManager.default.fileExists(atPath: t.file("groups/\(group)/group.key")))
                for name in try t.entries("groups/\(group)") where name.hasSuffix(".item") {
                    #expect(try t.bytes("groups/\(group)/\(name)")[4] == 2, "\(name)")
                }
            }
            // Another key opens nothing, and writes with the same key work after the upgrade.
            let wrong = try wrongKeySource(kind, t)
            #expect(
                status { _ = try Vault.open(at: t.path, client: client, keySource: wrong).data(for: key) } != .success)
            try upgraded.set(Data("v3".utf8), for: key, accessibility: .whenUnlocked)
            let reopened = try Vault.open(at: t.path, client: client, keySource: keySource(kind, t))
            #expect(try reopened.data(for: key) == Data("v3".utf8))
            let leftovers = try t.entries("").filter {
                $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
            }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    /// Each system call of the upgrade failing in turn (the state a kill there leaves): the next open,
    /// with the same key file or passphrase, has the vault as format 1 or 2, with every item, its key
    /// files as they were, and nothing left over.
    @Test(arguments: Kind.allCases)
    func anUpgradeStoppedAtAnyStepLeavesAVaultThatOpensWithEveryItem(_ kind: Kind) throws {
        let calls = try withTemporaryVault("upgrade-probe-\(kind.rawValue)") { probe in
            try makeFormatOneVault(kind, probe)
            return try systemCalls(of: { try Vault.upgrade(at: probe.path, keySource: keySource(kind, probe)) }).calls
        }
        var steps = 0
        var upgraded = 0
        for (operation, count) in calls.sorted(by: { "\($0.key)" < "\($1.key)" }) where count > 0 {
            for occurrence in sampledOccurrences(count) {
                try withTemporaryVault("upgrade-\(kind.rawValue)") { t in
                    try makeFormatOneVault(kind, t)
                    let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                    _ = try? FaultInjection.withPlan(plan) {
                        try Vault.upgrade(at: t.path, keySource: keySource(kind, t))
                    }
                    steps += 1
                    let context = "\(kind) \(operation) #\(occurrence)"
                    if try recover(kind, t) == 2 { upgraded += 1 }
                    try checkKeyFiles(kind, t, context)
                    let leftovers = try t.entries("").filter {
                        $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
                    }
                    #expect(leftovers.isEmpty, "\(context): \(leftovers)")
                    // Whichever format it came back in, the next open (which upgrades it, if need be) has every item.
                    try check(try Vault.open(at: t.path, client: client, keySource: keySource(kind, t)), context)
                }
            }
        }
        #expect(steps > 20)
        #expect(upgraded > 0 && upgraded < steps)
    }
}
