import Foundation
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// `rekey` of a vault: a new master key, every key file sealed again, no item file or
/// directory changed.
@Suite struct RekeyInPlaceTests {
    let privateGroup = try! GroupName("app")
    let sharedGroup = try! GroupName("db")
    let classes: [ProtectionClass] = [.always, .afterFirstUnlock, .whenUnlocked]

    /// A vault with one item of each class in a private group and in a group shared with gid
    /// 65534; returns the ids (the same index per group).
    func filled(_ vault: TemporaryVault, keySource: KeySource = KeySource()) throws -> [ItemID] {
        let store = try VaultStore.create(at: vault.path, keySource: keySource)
        try store.createGroup(sharedGroup, unixGroup: 65534)
        var ids: [ItemID] = []
        for (index, protectionClass) in classes.enumerated() {
            let id = try store.itemID(group: privateGroup, primaryKey: [UInt8(index)])
            try store.put(Array("private \(index)".utf8), group: privateGroup, id: id, protectionClass: protectionClass)
            let sharedID = try store.itemID(group: sharedGroup, primaryKey: [UInt8(index)])
            try store.put(
                Array("shared \(index)".utf8), group: sharedGroup, id: sharedID, protectionClass: protectionClass)
            ids.append(id)
        }
        return ids
    }

    func expectAllRead(_ path: String, keySource: KeySource = KeySource(), _ context: String = "") throws {
        let store = try VaultStore.open(at: path, keySource: keySource)
        for index in classes.indices {
            let id = try store.itemID(group: privateGroup, primaryKey: [UInt8(index)])
            #expect(try store.get(group: privateGroup, id: id) == Array("private \(index)".utf8), "\(context)")
            let sharedID = try store.itemID(group: sharedGroup, primaryKey: [UInt8(index)])
            #expect(try store.get(group: sharedGroup, id: sharedID) == Array("shared \(index)".utf8), "\(context)")
        }
    }

    /// Every regular file under the group directories, by relative path, with its bytes.
    func itemFiles(_ vault: TemporaryVault) throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        // Group directories (a name never starts with "."; `.shared.<gid>` is the members' index).
        for group in try vault.entries("groups") where !group.hasPrefix(".") {
            for name in try vault.entries("groups/\(group)") where name.hasSuffix(".item") {
                files["\(group)/\(name)"] = try vault.bytes("groups/\(group)/\(name)")
            }
        }
        return files
    }

    func inode(_ path: String) throws -> UInt64 {
        (try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as! NSNumber).uint64Value
    }

    /// The `.new` files and journal a rekey leaves while under way, anywhere in the vault.
    func leftovers(_ vault: TemporaryVault) throws -> [String] {
        var found = try vault.entries("").filter { $0.hasSuffix(".new") || $0 == "rekey.journal" }
        // Group directories (a name never starts with "."; `.shared.<gid>` is the members' index).
        for group in try vault.entries("groups") where !group.hasPrefix(".") {
            found += try vault.entries("groups/\(group)").filter { $0.hasSuffix(".new") }.map { "\(group)/\($0)" }
        }
        return found
    }

    @Test func aRekeySealsTheKeyFilesAgainAndLeavesEveryItemFileAndDirectoryAsItIs() throws {
        try withTemporaryVault("rekey2") { vault in
            _ = try filled(vault)
            let items = try itemFiles(vault)
            let directories = try [privateGroup, sharedGroup].map { try inode(vault.file("groups/\($0)")) }
            let oldMaster = try vault.bytes("master.key")
            let oldSharedKey = try vault.bytes("groups/\(sharedGroup)/group.key")
            let before = try VaultStore.open(at: vault.path)
            let oldMember = try GroupKeyFile.decodeAsMember(
                oldSharedKey, group: sharedGroup, vaultID: before.vaultID, path: "old")
            try before.rekey(newPassphrase: nil, keySource: KeySource())
            try expectAllRead(vault.path)
            #expect(try itemFiles(vault) == items, "an item file changed")
            #expect(try [privateGroup, sharedGroup].map { try inode(vault.file("groups/\($0)")) } == directories)
            #expect(try vault.bytes("master.key") != oldMaster)
            let left = try leftovers(vault)
            #expect(left.isEmpty, "\(left)")
            #expect(try vault.mode("groups/\(sharedGroup)/group.key") == 0o640)
            // A member's view of the shared group is the same keys, checked by the new file's MAC.
            let after = try VaultStore.open(at: vault.path)
            let member = try GroupKeyFile.decodeAsMember(
                try vault.bytes("groups/\(sharedGroup)/group.key"), group: sharedGroup, vaultID: after.vaultID,
                path: "new")
            #expect(member.secrets.keys.map(\.key) == oldMember.secrets.keys.map(\.key))
            #expect(member.groupID == oldMember.groupID)
            // The old master key opens nothing any more.
            try FileManager.default.removeItem(atPath: vault.file("master.key"))
            try Data(oldMaster).write(to: URL(fileURLWithPath: vault.file("master.key")))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: vault.file("master.key"))
            let refused = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(refused?.code == .wrongKey)
        }
    }

    @Test func aPassphraseVaultIsRekeyedToANewPassphraseAndStillLocks() throws {
        try withTemporaryVault("rekey2-pass") { vault in
            _ = try filled(vault, keySource: passphrase("old words"))
            let items = try itemFiles(vault)
            let store = try VaultStore.open(at: vault.path, keySource: passphrase("old words"))
            try store.rekey(newPassphrase: secure("new words"), limits: .minimum, keySource: passphrase("old words"))
            try expectAllRead(vault.path, keySource: passphrase("new words"))
            #expect(try itemFiles(vault) == items)
            #expect(throws: StoreError.self) {
                _ = try VaultStore.open(at: vault.path, keySource: passphrase("old words"))
            }
            // Without the passphrase: Always items read, the others of the private group are locked, and the
            // shared group (which cannot lock) reads whole.
            let locked = try VaultStore.open(at: vault.path)
            for (index, protectionClass) in classes.enumerated() {
                let id = try locked.itemID(group: privateGroup, primaryKey: [UInt8(index)])
                if protectionClass == .always {
                    #expect(try locked.get(group: privateGroup, id: id) == Array("private \(index)".utf8))
                } else {
                    let error = #expect(throws: StoreError.self) { _ = try locked.get(group: privateGroup, id: id) }
                    #expect(error?.code == .locked, "\(protectionClass)")
                }
                let sharedID = try locked.itemID(group: sharedGroup, primaryKey: [UInt8(index)])
                #expect(try locked.get(group: sharedGroup, id: sharedID) == Array("shared \(index)".utf8))
            }
        }
    }

    @Test func aKeyFileVaultIsRekeyedToANewKeyFile() throws {
        try withTemporaryVault("rekey2-keyfile") { vault in
            let oldKey = vault.root + "/old.key"
            let newKey = vault.root + "/new.key"
            _ = try filled(vault, keySource: KeySource(keyFile: oldKey))
            let items = try itemFiles(vault)
            let store = try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: oldKey))
            try store.rekey(newKeyFile: newKey, keySource: KeySource(keyFile: oldKey))
            try expectAllRead(vault.path, keySource: KeySource(keyFile: newKey))
            #expect(try itemFiles(vault) == items)
            #expect(!FileManager.default.fileExists(atPath: vault.file("master.key")))
            #expect(throws: StoreError.self) {
                _ = try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: oldKey))
            }
            #expect(try leftovers(vault).isEmpty)
            // A new key file inside the vault directory is refused before anything is made.
            for inside in [vault.path + "/classes.key.new", vault.path + "/groups/app/group.key.new"] {
                let refused = #expect(throws: StoreError.self) {
                    try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: newKey)).rekey(
                        newKeyFile: inside, keySource: KeySource(keyFile: newKey)
                    )
                }
                #expect(refused?.message.contains("inside the vault") == true, "\(String(describing: refused))")
                #expect(!FileManager.default.fileExists(atPath: inside))
            }
            try expectAllRead(vault.path, keySource: KeySource(keyFile: newKey))
        }
    }

    /// How a fault-sweep rekey is done: to a new plain key, a new passphrase, or a new key file.
    enum Destination: String, CaseIterable, CustomStringConvertible {
        case plain, passphrase, keyFile
        var description: String { rawValue }
    }

    /// Each system call of a rekey failing in turn (the state a crash there leaves): the next open,
    /// with whichever key is in place, reads every item and leaves nothing over; both outcomes occur.
    @Test(arguments: Destination.allCases)
    func aRekeyStoppedAtAnyStepLeavesTheVaultUnderTheOldKeyOrTheNew(_ destination: Destination) throws {
        try withTemporaryVault("rekey2-faults") { vault in
            // Two key files that the rekeys alternate between; two passphrases likewise.
            let keyFiles = [vault.root + "/a.key", vault.root + "/b.key"]
            let passphrases = ["first words", "second words"]
            var current = 0
            func source(_ index: Int) -> KeySource {
                switch destination {
                case .plain: return KeySource()
                case .passphrase: return passphrase(passphrases[index])
                case .keyFile: return KeySource(keyFile: keyFiles[index])
                }
            }
            func rekey(_ store: VaultStore, to next: Int) throws {
                switch destination {
                case .plain:
                    try store.rekey(newPassphrase: nil, keySource: source(current))
                case .passphrase:
                    try store.rekey(
                        newPassphrase: secure(passphrases[next]), limits: .minimum, keySource: source(current)
                    )
                case .keyFile:
                    try? FileManager.default.removeItem(atPath: keyFiles[next])
                    try store.rekey(newKeyFile: keyFiles[next], keySource: source(current))
                }
            }
            /// The key source the vault opens with now (the old one, or the new one after a roll-forward).
            func openable() throws -> Int {
                if (try? VaultStore.open(at: vault.path, keySource: source(current))) != nil { return current }
                _ = try VaultStore.open(at: vault.path, keySource: source(1 - current))
                return 1 - current
            }
            _ = try filled(vault, keySource: source(0))
            let counting = FaultPlan.counting()
            try FaultInjection.withPlan(counting) {
                try rekey(try VaultStore.open(at: vault.path, keySource: source(0)), to: 1)
            }
            current = 1
            var injected = 0
            var rekeyed = 0
            var steps = 0
            for operation in SystemOperation.allCases where counting.count(of: operation) > 0 {
                for occurrence in 1...counting.count(of: operation) {
                    // In a function of its own, so that the failed store's descriptors (and locks) go with it.
                    func attempt() throws -> Int {
                        let store = try VaultStore.open(at: vault.path, keySource: source(current))
                        let plan = FaultPlan(operation, occurrence: occurrence, effect: .fail(.ioError))
                        _ = try? FaultInjection.withPlan(plan) { try rekey(store, to: 1 - current) }
                        return plan.injectedCount
                    }
                    let master = try? vault.bytes("master.key")
                    injected += try attempt()
                    steps += 1
                    let now = try openable()
                    if now != current || destination == .plain && (try? vault.bytes("master.key")) != master {
                        rekeyed += 1
                    }
                    current = now
                    try expectAllRead(
                        vault.path, keySource: source(current), "\(destination) \(operation) #\(occurrence)")
                    let left = try leftovers(vault)
                    #expect(left.isEmpty, "\(destination) \(operation) #\(occurrence): \(left)")
                }
            }
            #expect(injected > 20)
            #expect(rekeyed > 0 && rekeyed < steps, "\(rekeyed) of \(steps)")
            print(
                "FIGURE rekey2-faults \(destination): \(injected) injected failures, \(rekeyed) of \(steps) ended rekeyed"
            )
        }
    }

    /// Opens and reads on another thread while rekeys run: each open reads every item (an open that
    /// finds the journal waits for the rekey's lock). An open that began before a rekey and reads its
    /// key files across the switch is retried by `open`. A store opened before a rekey that first
    /// reads a group's key after it is told that the vault was rekeyed, to open it again (FORMAT.md,
    /// "Interference and stale processes"): the reader does so, as a caller must, and every item is
    /// then read; no other failure is allowed, and the count of such reopens is printed.
    @Test func opensDuringRekeysAlwaysReadEveryItem() throws {
        try withTemporaryVault("rekey2-readers") { vault in
            _ = try filled(vault)
            final class Tally: @unchecked Sendable {
                let lock = NSLock()
                var opens = 0
                var reopened = 0
                var failures: [String] = []
                var done = false
            }
            let tally = Tally()
            let path = vault.path
            let reader = Thread {
                while true {
                    tally.lock.lock()
                    let done = tally.done
                    tally.lock.unlock()
                    if done { break }
                    do {
                        // What the store tells a caller whose open predates a rekey: open it again (as often
                        // as rekeys keep coming, here one after another).
                        var attempt = 0
                        while true {
                            do {
                                try self.expectAllRead(path, "reader")
                                break
                            } catch let error as StoreError
                                where error.message.contains("was rekeyed (or replaced) after") && attempt < 30
                            {
                                attempt += 1
                                tally.lock.lock()
                                tally.reopened += 1
                                tally.lock.unlock()
                            }
                        }
                        tally.lock.lock()
                        tally.opens += 1
                        tally.lock.unlock()
                    } catch {
                        tally.lock.lock()
                        tally.failures.append("\(error)")
                        tally.lock.unlock()
                    }
                }
            }
            reader.start()
            for _ in 0..<15 {
                try VaultStore.open(at: path).rekey(newPassphrase: nil, keySource: KeySource())
            }
            tally.lock.lock()
            tally.done = true
            tally.lock.unlock()
            while !reader.isFinished { Thread.sleep(forTimeInterval: 0.01) }
            #expect(tally.failures.isEmpty, "\(tally.failures.prefix(3))")
            print(
                "FIGURE rekey2-readers: 15 rekeys, \(tally.opens) opens meanwhile, \(tally.reopened) told to open "
                    + "again, \(tally.failures.count) failed")
        }
    }

    /// After a rekey of a passphrase vault, a process without the passphrase (locked) still makes a
    /// new private group and writes and reads its Always items there; its other classes stay locked.
    @Test func aLockedOpenAfterARekeyMakesGroupsAndKeepsTheOtherClassesLocked() throws {
        try withTemporaryVault("rekey2-locked") { vault in
            _ = try filled(vault, keySource: passphrase("old words"))
            try VaultStore.open(at: vault.path, keySource: passphrase("old words")).rekey(
                newPassphrase: secure("new words"), limits: .minimum, keySource: passphrase("old words")
            )
            let locked = try VaultStore.open(at: vault.path)
            let group = try GroupName("made-locked")
            let id = try locked.itemID(group: group, primaryKey: [1])
            try locked.put(Array("always".utf8), group: group, id: id, protectionClass: .always)
            #expect(try locked.get(group: group, id: id) == Array("always".utf8))
            let other = try locked.itemID(group: group, primaryKey: [2])
            let error = #expect(throws: StoreError.self) {
                try locked.put([2], group: group, id: other, protectionClass: .whenUnlocked)
            }
            #expect(error?.code == .locked)
            // The unlocked owner reads it, and everything else.
            let unlocked = try VaultStore.open(at: vault.path, keySource: passphrase("new words"))
            #expect(try unlocked.get(group: group, id: id) == Array("always".utf8))
            try expectAllRead(vault.path, keySource: passphrase("new words"))
        }
    }

    /// A vault made before `classes.key` existed (the fixture, made by `vault init --format 2`
    /// and three `vault put`s of commit cea5a1d): it opens and works, and its rekey gives it a
    /// `classes.key` (its class keys were its item class keys) and the marker's flag.
    @Test func aVaultMadeBeforeClassesKeyWorksAndItsRekeyGivesItItemClassKeys() throws {
        try withTemporaryVault("rekey2-dev") { vault in
            try copyStoreFixture("v2-dev-vault", to: vault.path)
            func values(_ store: VaultStore) throws -> [String] {
                var found: [String] = []
                for group in try store.groups() {
                    for id in try store.itemIDs(in: group) {
                        found.append(String(decoding: try store.get(group: group, id: id) ?? [], as: UTF8.self))
                    }
                }
                return found
            }
            func expectSecrets(_ store: VaultStore, _ context: String) throws {
                // Each value is an item record whose secret comes last.
                let texts = try values(store)
                #expect(texts.count == 3, "\(context)")
                for secret in ["legacy-secret-1", "legacy-secret-2", "x"] {
                    #expect(texts.contains { $0.hasSuffix(secret) }, "\(secret) \(context)")
                }
            }
            let store = try VaultStore.open(at: vault.path)
            #expect(try store.groups().map(\.rawValue) == ["team.shared", "vault"])
            try expectSecrets(store, "before")
            // A write in the old scheme still works before the rekey.
            let group = try GroupName("vault")
            let id = try store.itemID(group: group, primaryKey: [42])
            try store.put(Array("written before".utf8), group: group, id: id)
            #expect(try vault.bytes("VAULT")[5] == 0)
            let items = try itemFiles(vault)
            try store.rekey(newPassphrase: nil, keySource: KeySource())
            #expect(try vault.bytes("VAULT")[5] == 1, "the marker now says classes.key")
            #expect(try vault.mode("classes.key") == 0o600)
            #expect(try itemFiles(vault) == items)
            let after = try VaultStore.open(at: vault.path)
            #expect(try after.get(group: group, id: id) == Array("written before".utf8))
            let texts = try values(after)
            #expect(texts.count == 4)
            let left = try leftovers(vault)
            #expect(left.isEmpty, "\(left)")
        }
    }

    @Test func aMissingItemClassKeyFileIsReportedNotTakenForAnOlderVault() throws {
        try withTemporaryVault("rekey2-missing") { vault in
            _ = try filled(vault)
            try FileManager.default.removeItem(atPath: vault.file("classes.key"))
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .integrity)
            #expect(error?.message.contains("classes.key is missing") == true, "\(String(describing: error))")
        }
    }

    /// A store opened before another process's rekey holds keys the vault no longer has: it writes no
    /// key file with them (a new group, a passphrase, a rotation, a rekey), and says to open again.
    @Test func aStoreOpenedBeforeARekeySealsNothingUnderItsOldKeys() throws {
        try withTemporaryVault("rekey2-stale") { vault in
            _ = try filled(vault)
            let stale = try VaultStore.open(at: vault.path)
            try VaultStore.open(at: vault.path).rekey(newPassphrase: nil, keySource: KeySource())
            let newGroup = try GroupName("made-after")
            let attempts: [(String, () throws -> Void)] = [
                (
                    "first write to a new group",
                    {
                        try stale.put([1], group: newGroup, id: try stale.itemID(group: newGroup, primaryKey: [1]))
                    }
                ),
                ("createGroup", { try stale.createGroup(try GroupName("created-after"), unixGroup: nil) }),
                ("changePassphrase", { try stale.changePassphrase(to: secure("pw"), limits: .minimum) }),
                ("rotateGroup", { _ = try stale.rotateGroup(privateGroup) }),
                (
                    "rekey",
                    {
                        try stale.rekey(newPassphrase: nil, keySource: KeySource())
                    }
                ),
            ]
            for (what, attempt) in attempts {
                let error = #expect(throws: StoreError.self, "\(what)") { try attempt() }
                #expect(error?.message.contains("was rekeyed") == true, "\(what): \(String(describing: error))")
            }
            #expect(!FileManager.default.fileExists(atPath: vault.file("groups/made-after/group.key")))
            #expect(!FileManager.default.fileExists(atPath: vault.file("groups/created-after")))
            try expectAllRead(vault.path)
        }
    }

    /// A shared group whose `group.key` a rekey could not replace (a member broke the rename) still
    /// opens for the owner through its members' part; a private group's stale file does not.
    @Test func aSharedGroupKeyLeftUnderTheOldMasterKeyStillOpensForTheOwner() throws {
        try withTemporaryVault("rekey2-stale-shared") { vault in
            _ = try filled(vault)
            let oldShared = try vault.bytes("groups/\(sharedGroup)/group.key")
            let oldPrivate = try vault.bytes("groups/\(privateGroup)/group.key")
            try VaultStore.open(at: vault.path).rekey(newPassphrase: nil, keySource: KeySource())
            func putBack(_ bytes: [UInt8], _ group: GroupName, mode: Int) throws {
                let path = vault.file("groups/\(group)/group.key")
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                try FileManager.default.removeItem(atPath: path)
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                try FileManager.default.setAttributes(
                    [.posixPermissions: mode, .groupOwnerAccountID: attributes[.groupOwnerAccountID]!],
                    ofItemAtPath: path)
            }
            try putBack(oldShared, sharedGroup, mode: 0o640)
            let store = try VaultStore.open(at: vault.path)
            for index in classes.indices {
                let id = try store.itemID(group: sharedGroup, primaryKey: [UInt8(index)])
                #expect(try store.get(group: sharedGroup, id: id) == Array("shared \(index)".utf8))
            }
            try putBack(oldPrivate, privateGroup, mode: 0o600)
            let reopened = try VaultStore.open(at: vault.path)
            let error = #expect(throws: StoreError.self) {
                _ = try reopened.get(group: privateGroup, id: try reopened.itemID(group: privateGroup, primaryKey: [0]))
            }
            #expect(error?.code == .integrity)
        }
    }
}
