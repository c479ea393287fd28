import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

/// The upgrade of a format-1 vault: done by the first open that holds the key (and by `Vault.upgrade`),
/// crash-safe as a rekey.
@Suite struct UpgradeTests {
    let client = try! Client(applicationIdentifier: "vault", accessGroups: ["com.example.app", "team.shared"])

    /// The expected contents of the fixture (made by `vault init` and `vault put` of the format-1 code,
    /// 2026-12-01; `postgres` was put twice, so it has a generation record).
    let expected: [(service: String, account: String, group: String, value: String)] = [
        ("postgres", "app", "com.example.app", "v2"), ("api", "ci", "com.example.app", "api-token"),
        ("cache", "key", "team.shared", "shared"),
    ]

    func copyFixture(to path: String) throws { try FormatOneFixture.plain.copy(to: path) }

    /// What an open does before the upgrade: the recovery of an interrupted one, then (for a vault
    /// still in format 1) `needsUpgrade`. The format the vault is in afterwards.
    func recover(_ path: String) throws -> UInt8 {
        do {
            _ = try VaultStore.open(at: path, keySource: KeySource())
        } catch {
            #expect(error.code == .needsUpgrade, "\(error)")
        }
        return try FormatOneFixture.version(at: path)
    }

    /// Whether the vault at `path` has nothing left of an upgrade: no `.new`, `.old` or journal.
    func leftovers(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter {
            $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
        }
    }

    func check(_ vault: Vault, _ context: String = "") throws {
        for item in expected {
            let key = try ItemKey(service: item.service, account: item.account, group: try AccessGroup(item.group))
            #expect(try vault.data(for: key) == Data(item.value.utf8), "\(item.service) \(context)")
        }
    }

    @Test func aFormatOneVaultFromTheFixtureIsUpgradedAtItsFirstOpen() throws {
        try withTemporaryVault("upgrade") { t in
            try copyFixture(to: t.path)
            #expect(try FormatOneFixture.version(at: t.path) == 1)
            let store = #expect(throws: StoreError.self) { try VaultStore.open(at: t.path) }
            #expect(store?.code == .needsUpgrade && store?.message.contains("`vault upgrade`") == true)
            let upgraded = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(upgraded.upgradedOnOpen)
            #expect(try FormatOneFixture.version(at: t.path) == 2)
            try check(upgraded, "upgraded")
            #expect(try t.bytes("VAULT")[4] == 2)
            #expect(try t.mode("VAULT") == 0o644)
            for group in ["com.example.app", "team.shared"] {
                #expect(FileManager.default.fileExists(atPath: t.file("groups/\(group)/group.key")))
                for name in try t.entries("groups/\(group)") where name.hasSuffix(".item") {
                    #expect(try t.bytes("groups/\(group)/\(name)")[4] == 2, "\(name)")
                }
            }
            // Writes and the rollback check work on the new format; the next open upgrades nothing, and an
            // explicit upgrade changes nothing.
            let key = try ItemKey(service: "postgres", account: "app", group: try AccessGroup("com.example.app"))
            try upgraded.set(Data("v3".utf8), for: key)
            let reopened = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(!reopened.upgradedOnOpen)
            #expect(try reopened.data(for: key) == Data("v3".utf8))
            #expect(try Vault.upgrade(at: t.path, keySource: KeySource()) == false)
            let left = try leftovers(t.path)
            #expect(left.isEmpty, "\(left)")
        }
    }

    /// A damaged item (one that fails authentication) stops the upgrade before anything is written,
    /// named; moved out of the vault, the next open upgrades the rest.
    @Test func aDamagedItemStopsTheUpgradeBeforeAnythingIsWritten() throws {
        try withTemporaryVault("upgrade-damaged") { t in
            try copyFixture(to: t.path)
            let group = "groups/com.example.app"
            let name = try #require(try t.entries(group).first { $0.hasSuffix(".item") })
            var bytes = try t.bytes("\(group)/\(name)")
            bytes[bytes.count - 1] ^= 1
            try t.write(bytes, to: "\(group)/\(name)")
            let before = try t.entries("")
            let refused = #expect(throws: VaultError.self) {
                try Vault.open(at: t.path, client: client, keySource: KeySource())
            }
            #expect(refused?.status == .decode)
            #expect(refused?.message.contains(name) == true && refused?.message.contains("`vault upgrade`") == true)
            #expect(try t.entries("") == before)
            #expect(try FormatOneFixture.version(at: t.path) == 1)
            try FileManager.default.moveItem(atPath: t.file("\(group)/\(name)"), toPath: t.root + "/" + name)
            let upgraded = try Vault.open(at: t.path, client: client, keySource: KeySource())
            #expect(upgraded.upgradedOnOpen)
            let cache = try ItemKey(service: "cache", account: "key", group: try AccessGroup("team.shared"))
            #expect(try upgraded.data(for: cache) == Data("shared".utf8))
        }
    }

    /// A `master.key.new` (or `always.key.new`) that no rekey is writing would be renamed over the key at
    /// the upgrade's commit: it is refused first, named, and nothing changes.
    @Test func aStrayNewKeyFileIsRefusedBeforeTheUpgrade() throws {
        for name in ["master.key.new", "always.key.new"] {
            try withTemporaryVault("upgrade-stray") { t in
                try copyFixture(to: t.path)
                try t.write([UInt8](repeating: 9, count: 32), to: name)
                let before = try t.entries("")
                let refused = #expect(throws: VaultError.self) {
                    try Vault.open(at: t.path, client: client, keySource: KeySource())
                }
                #expect(refused?.message.contains(name) == true, "\(String(describing: refused))")
                #expect(try t.entries("") == before)
                #expect(try FormatOneFixture.version(at: t.path) == 1)
            }
        }
    }

    /// Each system call of an upgrade failing in turn (the state a crash there leaves): the next open
    /// has the vault as format 1 or 2, with every item, and nothing left over.
    @Test func anUpgradeFailingAtAnyStepLeavesEitherFormatWithEveryItem() throws {
        let calls = try withTemporaryVault("upgrade-probe") { probe in
            try copyFixture(to: probe.path)
            return try systemCalls(of: { try Vault.upgrade(at: probe.path, keySource: KeySource()) }).calls
        }
        var steps = 0
        var upgraded = 0
        for (operation, count) in calls where count > 0 {
            for occurrence in sampledOccurrences(count) {
                try withTemporaryVault("upgrade") { t in
                    try copyFixture(to: t.path)
                    let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                    _ = try? FaultInjection.withPlan(plan) { try Vault.upgrade(at: t.path, keySource: KeySource()) }
                    steps += 1
                    if try recover(t.path) == 2 { upgraded += 1 }
                    let left = try leftovers(t.path)
                    #expect(left.isEmpty, "\(operation) #\(occurrence): \(left)")
                    // Whichever format it came back in, the next open has every item.
                    try check(
                        try Vault.open(at: t.path, client: client, keySource: KeySource()),
                        "\(operation) #\(occurrence)")
                }
            }
        }
        #expect(steps > 20)
        #expect(upgraded > 0 && upgraded < steps)
    }
}

/// The upgrade that an open runs, stopped at each step (each system call of the open failing in turn,
/// as a kill there would leave it): the next open, with nothing failing, finishes it, every item there.
@Suite struct UpgradeOnOpenTests {
    let client = try! Client(applicationIdentifier: "vault", accessGroups: ["com.example.app", "team.shared"])

    @Test func anOpenStoppedAtAnyStepOfItsUpgradeLeavesAVaultTheNextOpenUpgrades() throws {
        let upgrade = UpgradeTests()
        let calls = try withTemporaryVault("upgrade-on-open-probe") { probe in
            try FormatOneFixture.plain.copy(to: probe.path)
            return try systemCalls(of: {
                _ = try Vault.open(at: probe.path, client: client, keySource: KeySource())
            }).calls
        }
        var steps = 0
        var stoppedBeforeTheCommit = 0
        for (operation, count) in calls.sorted(by: { "\($0.key)" < "\($1.key)" }) where count > 0 {
            for occurrence in sampledOccurrences(count) {
                try withTemporaryVault("upgrade-on-open") { t in
                    try FormatOneFixture.plain.copy(to: t.path)
                    let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                    let context = "\(operation) #\(occurrence)"
                    do {
                        let opened = try FaultInjection.withPlan(plan) {
                            try Vault.open(at: t.path, client: client, keySource: KeySource())
                        }
                        // An open that succeeded with the fault in it gives an upgraded vault.
                        #expect(try FormatOneFixture.version(at: opened.path) == 2, "\(context)")
                    } catch {
                        if try FormatOneFixture.version(at: t.path) == 1 { stoppedBeforeTheCommit += 1 }
                    }
                    steps += 1
                    let reopened = try Vault.open(at: t.path, client: client, keySource: KeySource())
                    #expect(try FormatOneFixture.version(at: t.path) == 2, "\(context)")
                    try upgrade.check(reopened, context)
                    let left = try upgrade.leftovers(t.path)
                    #expect(left.isEmpty, "\(context): \(left)")
                }
            }
        }
        #expect(steps > 20)
        #expect(stoppedBeforeTheCommit > 0)
    }
}
