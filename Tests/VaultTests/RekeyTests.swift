import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultSystem

@testable import Vault

@Suite struct RekeyTests {
    func fill(_ vault: Vault) throws -> [String: Data] {
        var expected: [String: Data] = [:]
        for (service, accessibility) in [
            ("always", Accessibility.always), ("afu", .afterFirstUnlock), ("wu", .whenUnlocked),
        ] {
            try vault.set(Data(service.utf8), for: try ItemKey(service: service), accessibility: accessibility)
            expected[service] = Data(service.utf8)
        }
        try vault.add(.genericPassword, attributes: genp("shared", "x", group: "team.shared"), data: Data("shared"))
        return expected
    }

    func check(_ vault: Vault, _ expected: [String: Data]) throws {
        for (service, data) in expected {
            #expect(try vault.data(for: try ItemKey(service: service)) == data, "\(service)")
        }
        #expect(try vault.data(for: try ItemKey(service: "shared", account: "x")) == Data("shared"))
    }

    @Test func rekeyReEncryptsEveryItemUnderANewKey() throws {
        let t = try TestVault()
        defer { t.remove() }
        let vault = try t.open(groups: ["team.shared"])
        let expected = try fill(vault)
        let reference = try vault.copyMatching(.genericPassword(service: "always"), returning: .persistentReference)[0]
        let oldKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
        let oldFiles = try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/team.shared")
        try vault.rekey(newPassphrase: nil, keySource: KeySource())
        let newKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
        #expect(newKey != oldKey && newKey.count == 32)
        let newFiles = try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/team.shared")
        #expect(Set(newFiles.filter { $0.hasSuffix(".item") }).isDisjoint(with: oldFiles))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: t.path).sorted() == [
                ".lock", "VAULT", "groups", "master.key",
            ])
        let reopened = try t.open(groups: ["team.shared"])
        try check(reopened, expected)
        // Persistent references survive (the item ids changed, the persistent ids did not).
        #expect(
            try reopened.copyMatching(Query(itemClass: nil, persistentReference: reference.persistentReference)).count
                == 1)
        // The old key opens nothing now.
        try oldKey.write(to: URL(fileURLWithPath: t.path + "/master.key"))
        #expect(status { _ = try t.open(groups: ["team.shared"]) } == .decode)
    }

    @Test func rekeyOfAPassphraseVault() throws {
        let t = try TestVault()
        defer { t.remove() }
        func source(_ text: String) -> KeySource {
            KeySource(
                passphrase: { _ in try Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) } },
                limits: .minimum)
        }
        let client = try Client(applicationIdentifier: "com.example.app", accessGroups: ["team.shared"])
        let vault = try Vault.create(at: t.path, client: client, keySource: source("old"))
        let expected = try fill(vault)
        let newPassphrase = try Array("new".utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
        try vault.rekey(newPassphrase: newPassphrase, limits: .minimum, keySource: KeySource())
        #expect(status { _ = try Vault.open(at: t.path, client: client, keySource: source("old")) } == .authFailed)
        try check(try Vault.open(at: t.path, client: client, keySource: source("new")), expected)
        // Locked, the new always.key still reads Always items.
        let locked = try Vault.open(at: t.path, client: client, keySource: KeySource())
        #expect(try locked.data(for: try ItemKey(service: "always")) == Data("always"))
        #expect(status { _ = try locked.data(for: try ItemKey(service: "wu")) } == .interactionNotAllowed)
    }

    /// A rekey killed at every step (each system call failing in turn): the next open finishes or
    /// undoes it, and the vault has every item, under the old key or the new one.
    @Test func aRekeyFailingAtAnyStepLeavesAVaultWithEveryItem() throws {
        let probe = try TestVault()
        defer { probe.remove() }
        let probeVault = try probe.open(groups: ["team.shared"])
        _ = try fill(probeVault)
        let counts = FaultPlan.counting()
        try FaultInjection.withPlan(counts) { try probeVault.rekey(newPassphrase: nil, keySource: KeySource()) }
        var steps = 0
        var committed = 0
        for op in SystemOperation.allCases where counts.count(of: op) > 0 {
            // Every occurrence of the rarer calls, a sample of the frequent ones (all renames and fsyncs).
            let total = counts.count(of: op)
            let occurrences =
                total <= 40 ? Array(1...total) : stride(from: 1, through: total, by: total / 20).map { $0 }
            for occurrence in occurrences {
                let t = try TestVault()
                defer { t.remove() }
                let vault = try t.open(groups: ["team.shared"])
                let expected = try fill(vault)
                let oldKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
                let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                let succeeded =
                    (try? FaultInjection.withPlan(plan) { try vault.rekey(newPassphrase: nil, keySource: KeySource()) })
                    != nil
                steps += 1
                let state = (try? FileManager.default.contentsOfDirectory(atPath: t.path).sorted()) ?? []
                let reopened: Vault
                do {
                    reopened = try t.open(groups: ["team.shared"])
                } catch {
                    Issue.record("\(op) #\(occurrence) (succeeded: \(succeeded)), files \(state): \(error)")
                    continue
                }
                try check(reopened, expected)
                let key = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
                if key != oldKey { committed += 1 }
                if succeeded { #expect(key != oldKey, "\(op) #\(occurrence)") }
                let leftovers = try FileManager.default.contentsOfDirectory(atPath: t.path).filter {
                    $0.hasSuffix(".new") || $0.hasSuffix(".old")
                }
                #expect(leftovers.isEmpty, "\(op) #\(occurrence): \(leftovers)")
            }
        }
        #expect(steps > 20)
        #expect(committed > 0 && committed < steps)
    }
}
