import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

@Suite struct RekeyTests {
    /// The calls of `calls` to fail in turn: every occurrence of the rarer calls, a sample of the
    /// frequent ones (all renames and fsyncs).
    func sampled(_ calls: [SystemOperation: Int]) -> [(SystemOperation, Int)] {
        SystemOperation.allCases.filter { calls[$0, default: 0] > 0 }.flatMap { op in
            let total = calls[op, default: 0]
            let occurrences =
                total <= 40 ? Array(1...total) : stride(from: 1, through: total, by: total / 20).map { $0 }
            return occurrences.map { (op, $0) }
        }
    }

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

    /// The rekey seals every key file again in place: item files stay byte for byte.
    @Test func rekeyMakesANewKeyAndKeepsEveryItemFile() throws {
        try withTemporaryVault { t in
            let vault = try t.open(groups: ["team.shared"])
            let expected = try fill(vault)
            let reference = try vault.copyMatching(
                .genericPassword(service: "always"), returning: .persistentReference)[0]
            let oldKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
            let oldFiles = try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/team.shared")
            try vault.rekey(newPassphrase: nil, keySource: KeySource())
            let newKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
            #expect(newKey != oldKey && newKey.count == 32)
            let newFiles = try FileManager.default.contentsOfDirectory(atPath: t.path + "/groups/team.shared")
            #expect(Set(newFiles.filter { $0.hasSuffix(".item") }) == Set(oldFiles.filter { $0.hasSuffix(".item") }))
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: t.path).sorted() == [
                    ".lock", "VAULT", "classes.key", "groups", "master.key",
                ])
            let reopened = try t.open(groups: ["team.shared"])
            try check(reopened, expected)
            // Persistent references survive (the item ids changed, the persistent ids did not).
            #expect(
                try reopened.copyMatching(Query(itemClass: nil, persistentReference: reference.persistentReference))
                    .count
                    == 1)
            // The old key opens nothing now.
            try oldKey.write(to: URL(fileURLWithPath: t.path + "/master.key"))
            #expect(status { _ = try t.open(groups: ["team.shared"]) } == .authFailed)
        }
    }

    @Test func rekeyOfAPassphraseVault() throws {
        try withTemporaryVault { t in
            func source(_ text: String) -> KeySource {
                KeySource(
                    passphrase: { (_) throws(StoreError) in try secureBytes(Array(text.utf8)) },
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
    }

    /// A rekey killed at every step (each system call failing in turn): the next open finishes or
    /// undoes it, and the vault has every item, under the old key or the new one.
    @Test func aRekeyFailingAtAnyStepLeavesAVaultWithEveryItem() throws {
        try withTemporaryVault { probe in
            let probeVault = try probe.open(groups: ["team.shared"])
            _ = try fill(probeVault)
            let calls = try systemCalls { try probeVault.rekey(newPassphrase: nil, keySource: KeySource()) }.calls
            var steps = 0
            var committed = 0
            for (op, occurrence) in sampled(calls) {
                try withTemporaryVault { t in
                    let vault = try t.open(groups: ["team.shared"])
                    let expected = try fill(vault)
                    let oldKey = try Data(contentsOf: URL(fileURLWithPath: t.path + "/master.key"))
                    let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                    let succeeded =
                        (try? FaultInjection.withPlan(plan) {
                            try vault.rekey(newPassphrase: nil, keySource: KeySource())
                        })
                        != nil
                    steps += 1
                    let state = (try? FileManager.default.contentsOfDirectory(atPath: t.path).sorted()) ?? []
                    let reopened: Vault
                    do {
                        reopened = try t.open(groups: ["team.shared"])
                    } catch {
                        Issue.record("\(op) #\(occurrence) (succeeded: \(succeeded)), files \(state): \(error)")
                        return
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

    // MARK: Key-file vaults

    let client = try! Client(applicationIdentifier: "com.example.app", accessGroups: ["team.shared"])

    func keyFileVault(_ t: TemporaryVault) throws -> (vault: Vault, oldKey: String, newKey: String) {
        let oldKey = t.root + "/old.key"
        let vault = try Vault.create(at: t.path, client: client, keySource: KeySource(keyFile: oldKey))
        return (vault, oldKey, t.root + "/new.key")
    }

    func open(_ t: TemporaryVault, keyFile: String?) throws -> Vault {
        try Vault.open(at: t.path, client: client, keySource: KeySource(keyFile: keyFile))
    }

    @Test func rekeyOfAKeyFileVaultMovesItToTheNewKeyFile() throws {
        try withTemporaryVault { t in
            let (vault, oldKey, newKey) = try keyFileVault(t)
            let expected = try fill(vault)
            let oldBytes = try Data(contentsOf: URL(fileURLWithPath: oldKey))
            try vault.rekey(newKeyFile: newKey, keySource: KeySource(keyFile: oldKey))
            // The new file: 32 fresh bytes, 0600; the old one untouched, and no key in the vault.
            let attributes = try FileManager.default.attributesOfItem(atPath: newKey)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            let newBytes = try Data(contentsOf: URL(fileURLWithPath: newKey))
            #expect(newBytes.count == 32 && newBytes != oldBytes)
            #expect(try Data(contentsOf: URL(fileURLWithPath: oldKey)) == oldBytes)
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: t.path).sorted() == [
                    ".lock", "VAULT", "classes.key", "groups",
                ])
            try check(try open(t, keyFile: newKey), expected)
            #expect(status { _ = try open(t, keyFile: oldKey) } == .authFailed)
            // And again, to a key file the operator made (0600), from a relative path's point of view too.
            let made = t.root + "/made.key"
            _ = FileManager.default.createFile(
                atPath: made, contents: Data((0..<32).map { UInt8($0) }), attributes: [.posixPermissions: 0o600])
            try open(t, keyFile: newKey).rekey(newKeyFile: made, keySource: KeySource(keyFile: newKey))
            try check(try open(t, keyFile: made), expected)
        }
    }

    @Test func aKeyFileRekeyRefusesAnUnsafeOrCurrentNewKeyFile() throws {
        try withTemporaryVault { t in
            let (vault, oldKey, newKey) = try keyFileVault(t)
            let expected = try fill(vault)
            let source = KeySource(keyFile: oldKey)
            // Readable by others: refused before anything changes.
            _ = FileManager.default.createFile(
                atPath: newKey, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o644])
            #expect(status { try vault.rekey(newKeyFile: newKey, keySource: source) } == .permissionDenied)
            // Not 32 bytes.
            try FileManager.default.removeItem(atPath: newKey)
            _ = FileManager.default.createFile(
                atPath: newKey, contents: Data("not a key\n".utf8), attributes: [.posixPermissions: 0o600])
            #expect(status { try vault.rekey(newKeyFile: newKey, keySource: source) } == .decode)
            // The current key, or the current file.
            #expect(status { try vault.rekey(newKeyFile: oldKey, keySource: source) } == .param)
            // A directory that does not exist.
            #expect(status { try vault.rekey(newKeyFile: t.root + "/none/new.key", keySource: source) } == .io)
            // A key-file vault is not rekeyed into master.key, nor a master.key vault into a key file.
            #expect(status { try vault.rekey(newPassphrase: nil, keySource: source) } == .param)
            try check(try open(t, keyFile: oldKey), expected)
            #expect(!FileManager.default.fileExists(atPath: t.path + "/" + "rekey.journal"))
            try withTemporaryVault { plain in
                #expect(status { try plain.open().rekey(newKeyFile: newKey, keySource: KeySource()) } == .param)
            }
        }
    }

    /// The key-file rekey failing at every step: the next open, given the old key file, the new one or
    /// neither, finishes or undoes it, and the vault then opens with one of the two with every item.
    @Test func aKeyFileRekeyFailingAtAnyStepLeavesAVaultThatEitherKeyFileOpens() throws {
        try withTemporaryVault { probe in
            let (probeVault, probeOld, probeNew) = try keyFileVault(probe)
            _ = try fill(probeVault)
            let calls = try systemCalls {
                try probeVault.rekey(newKeyFile: probeNew, keySource: KeySource(keyFile: probeOld))
            }.calls
            var steps = 0
            var committed = 0
            for (op, occurrence) in sampled(calls) {
                try withTemporaryVault { t in
                    let (vault, oldKey, newKey) = try keyFileVault(t)
                    let expected = try fill(vault)
                    let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                    let succeeded =
                        (try? FaultInjection.withPlan(plan) {
                            try vault.rekey(newKeyFile: newKey, keySource: KeySource(keyFile: oldKey))
                        }) != nil
                    let state = (try? FileManager.default.contentsOfDirectory(atPath: t.path).sorted()) ?? []
                    // Recovery by whichever key file the next process has: the old, the new, or none at all.
                    let recoverer = [oldKey, newKey, nil][steps % 3]
                    steps += 1
                    _ = try? open(t, keyFile: recoverer)
                    if recoverer == nil, state.contains("rekey.journal") {
                        // With neither key file given, the journal's own record of the new key file verifies it.
                        #expect(
                            !FileManager.default.fileExists(atPath: t.path + "/rekey.journal"),
                            "\(op) #\(occurrence): an open with no key file left the journal of \(state)")
                    }
                    let opened: (vault: Vault, key: String)
                    if let byOld = try? open(t, keyFile: oldKey) {
                        opened = (byOld, oldKey)
                    } else {
                        do {
                            opened = (try open(t, keyFile: newKey), newKey)
                        } catch {
                            let by = recoverer ?? "none"
                            Issue.record(
                                "\(op) #\(occurrence) (\(succeeded), recovered by \(by)), \(state): \(error)")
                            return
                        }
                    }
                    try check(opened.vault, expected)
                    if opened.key == newKey { committed += 1 }
                    if succeeded { #expect(opened.key == newKey, "\(op) #\(occurrence)") }
                    let leftovers = try FileManager.default.contentsOfDirectory(atPath: t.path).filter {
                        $0.hasSuffix(".new") || $0.hasSuffix(".old") || $0 == "rekey.journal"
                    }
                    #expect(leftovers.isEmpty, "\(op) #\(occurrence): \(leftovers)")
                }
            }
            #expect(steps > 20)
            #expect(committed > 0 && committed < steps)
        }
    }

    /// An interrupted key-file rekey after its commit point, finished by an open that has only the old
    /// key file: that open says which key file opens the vault now.
    @Test func anOpenThatFinishesAKeyFileRekeyNamesTheNewKeyFile() throws {
        try withTemporaryVault { t in
            let (vault, oldKey, newKey) = try keyFileVault(t)
            let expected = try fill(vault)
            // A rename after the commit point (VAULT.new → VAULT is the first rename of the switch).
            let counts = FaultPlan.counting()
            try withTemporaryVault { probe in
                let (probeVault, probeOld, probeNew) = try keyFileVault(probe)
                _ = try fill(probeVault)
                try FaultInjection.withPlan(counts) {
                    try probeVault.rekey(newKeyFile: probeNew, keySource: KeySource(keyFile: probeOld))
                }
                // Fail the last rename but one, after the commit point.
                let plan = FaultPlan(.rename, occurrence: counts.count(of: .rename) - 1, effect: .fail(.ioError))
                #expect(
                    status {
                        try FaultInjection.withPlan(plan) {
                            try vault.rekey(newKeyFile: newKey, keySource: KeySource(keyFile: oldKey))
                        }
                    } != .success)
                #expect(!FileManager.default.fileExists(atPath: t.path + "/VAULT.new"))
                #expect(FileManager.default.fileExists(atPath: t.path + "/rekey.journal"))
                do {
                    _ = try open(t, keyFile: oldKey)
                    Issue.record("the old key file opened a vault rekeyed past its commit point")
                } catch let error as VaultError {
                    #expect(error.status == .interactionNotAllowed)
                    #expect(error.message.contains(newKey) && error.message.contains("--key-file"), "\(error.message)")
                }
                try check(try open(t, keyFile: newKey), expected)
            }
        }
    }
}
