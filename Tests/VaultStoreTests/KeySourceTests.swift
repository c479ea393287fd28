import Foundation
import Synchronization
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

func secure(_ text: String) -> SecureBytes {
    try! Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
}

/// A passphrase source for tests: always answers `text`, and counts the questions.
func passphrase(_ text: String) -> KeySource {
    KeySource(passphrase: { _ in secure(text) }, limits: .minimum)
}

@Suite struct PassphraseTests {
    @Test func aWrappedVaultOpensWithItsPassphraseOnly() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("correct horse"))
            let group = try GroupName("g")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("secret".utf8), group: group, id: id)
            let file = try vault.bytes("master.key")
            #expect(file.count == WrappedMasterKey.byteCount)
            #expect(Array(file[0..<4]) == Array("VLTK".utf8))
            #expect(try vault.mode("master.key") == 0o600)

            let reopened = try VaultStore.open(at: vault.path, keySource: passphrase("correct horse"))
            #expect(try reopened.get(group: group, id: id) == Array("secret".utf8))

            let wrong = #expect(throws: StoreError.self) {
                _ = try VaultStore.open(at: vault.path, keySource: passphrase("wrong horse"))
            }
            #expect(wrong?.code == .wrongPassphrase)
            #expect(wrong?.message.contains("master.key") == true)

            // Without the passphrase the vault opens locked: only the `always` class key is there.
            let locked = try VaultStore.open(at: vault.path)
            #expect(locked.isAvailable(.always))
            #expect(!locked.isAvailable(.afterFirstUnlock) && !locked.isAvailable(.whenUnlocked))
            #expect(try locked.get(group: group, id: id) == Array("secret".utf8))  // written as `always`
            let wuID = try store.itemID(group: group, primaryKey: [2])
            try store.put([2], group: group, id: wuID, protectionClass: .whenUnlocked)
            let error = #expect(throws: StoreError.self) { _ = try locked.get(group: group, id: wuID) }
            #expect(error?.code == .locked)
            #expect(error?.message.contains("WhenUnlocked") == true)
            #expect(error?.message.contains("vault unlock") == true)
            #expect(throws: StoreError.self) {
                try locked.put([3], group: group, id: wuID, protectionClass: .whenUnlocked)
            }
            #expect(try vault.bytes("always.key").count == 64)
            #expect(try vault.mode("always.key") == 0o600)
        }
    }

    @Test func everyBitFlipOfTheWrappedKeyIsDamageNotAWrongPassphrase() throws {
        try withTemporaryVault("store") { vault in
            _ = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let original = try vault.bytes("master.key")
            for bit in 0..<(original.count * 8) {
                var damaged = original
                damaged[bit / 8] ^= UInt8(1 << (bit % 8))
                try vault.write(damaged, to: "master.key")
                let error = #expect(throws: StoreError.self) {
                    _ = try VaultStore.open(at: vault.path, keySource: passphrase("pw"))
                }
                #expect(error?.code == .integrity, "bit \(bit): \(String(describing: error))")
            }
            try vault.write(original, to: "master.key")
            _ = try VaultStore.open(at: vault.path, keySource: passphrase("pw"))
        }
    }

    @Test func aForgedHeaderWithARecomputedChecksumStillFails() throws {
        // Lowering the recorded cost (and fixing the checksum, which is not a MAC) breaks the AEAD,
        // which authenticates the header: the weaker limits are never used to unwrap.
        try withTemporaryVault("store") { vault in
            let key = try SymmetricKey.random()
            var bytes = try WrappedMasterKey.wrap(
                key, passphrase: secure("pw"), limits: .init(operations: 2, memoryBytes: 16384))
            bytes[11] = 1  // operations 2 -> 1
            let body = Array(bytes[0..<(bytes.count - 16)])
            let sum = try KeyDerivation.keyedHash(
                body, key: try SymmetricKey.zero(), domain: WrappedMasterKey.checksumDomain, outputByteCount: 16
            )
            bytes = body + sum
            let error = #expect(throws: StoreError.self) {
                _ = try WrappedMasterKey.unwrap(bytes, passphrase: secure("pw"), path: "master.key")
            }
            #expect(error?.code == .wrongPassphrase)
        }
    }

    /// Before: a key file whose header asked for 2 GiB of Argon2id memory took that memory (and its
    /// time) at every open, and only then failed.
    @Test func aKeyFileAskingForMoreThanTheCeilingIsRefusedBeforeAnyWork() throws {
        try withTemporaryVault("store") { vault in
            _ = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let path = vault.path + "/master.key"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            // Memory 2 GiB (within what a file may say, above the default ceiling), checksum fixed.
            let memory = UInt64(2) << 30
            for i in 0..<8 { bytes[12 + i] = UInt8(truncatingIfNeeded: memory >> (8 * UInt64(7 - i))) }
            let body = Array(bytes[0..<(bytes.count - 16)])
            let sum = try KeyDerivation.keyedHash(
                body, key: try SymmetricKey.zero(), domain: WrappedMasterKey.checksumDomain, outputByteCount: 16
            )
            try Data(body + sum).write(to: URL(fileURLWithPath: path))
            let asked = Mutex(false)
            var source = passphrase("pw")
            source.usesUnlockCache = false
            let inner = source.passphrase!
            source.passphrase = { (request) throws in
                asked.withLock { $0 = true }
                return try inner(request)
            }
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path, keySource: source) }
            #expect(error?.code == .invalidName, "\(String(describing: error))")
            #expect(error?.message.contains("ceiling") == true)
            #expect(!asked.withLock { $0 }, "the passphrase was asked for")
        }
    }

    @Test func changingThePassphraseKeepsTheKeyAndTheItems() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("old"))
            let group = try GroupName("g")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([42], group: group, id: id)
            try store.changePassphrase(to: secure("new"), limits: .minimum)
            #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path, keySource: passphrase("old")) }
            #expect(try VaultStore.open(at: vault.path, keySource: passphrase("new")).get(group: group, id: id) == [42])
            // Removing the passphrase stores the same key plainly.
            try store.changePassphrase(to: nil)
            #expect(try vault.bytes("master.key").count == 32)
            #expect(try VaultStore.open(at: vault.path).get(group: group, id: id) == [42])
            // And a plain vault can get a passphrase.
            try store.changePassphrase(to: secure("again"), limits: .minimum)
            #expect(
                try VaultStore.open(at: vault.path, keySource: passphrase("again")).get(group: group, id: id) == [42])
        }
    }

    /// passwd killed at every step (every system call of the rewrite failing in turn): the vault then
    /// opens with the old passphrase or the new one, and no temp file is left once a writer has run.
    @Test func aPassphraseChangeFailingAtAnyStepLeavesAWorkingVault() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("old"))
            let probe = FaultPlan.counting()
            try FaultInjection.withPlan(probe) { try store.changePassphrase(to: secure("old"), limits: .minimum) }
            var failures = 0
            for op in SystemOperation.allCases where probe.count(of: op) > 0 {
                for occurrence in 1...probe.count(of: op) {
                    try store.changePassphrase(to: secure("old"), limits: .minimum)
                    let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                    let changed =
                        (try? FaultInjection.withPlan(plan) {
                            try store.changePassphrase(to: secure("new"), limits: .minimum)
                        })
                        != nil
                    if !changed { failures += 1 }
                    let old = try? VaultStore.open(at: vault.path, keySource: passphrase("old"))
                    let new = try? VaultStore.open(at: vault.path, keySource: passphrase("new"))
                    #expect((old != nil) != (new != nil), "\(op) #\(occurrence): exactly one passphrase must work")
                    if changed { #expect(new != nil, "\(op) #\(occurrence)") }
                    #expect(
                        try vault.entries("").filter { $0.hasPrefix(".tmp") }.isEmpty || op == .unlink,
                        "\(op) #\(occurrence)")
                }
            }
            #expect(failures > 3)
        }
    }
}

@Suite struct ExternalKeyFileTests {
    @Test func aVaultWithAnExternalKeyFile() throws {
        try withTemporaryVault("store") { vault in
            let keyPath = vault.root + "/credentials/vault.key"
            try FileManager.default.createDirectory(
                atPath: vault.root + "/credentials", withIntermediateDirectories: true)
            let store = try VaultStore.create(at: vault.path, keySource: KeySource(keyFile: keyPath))
            #expect(try vault.entries("").contains("master.key") == false)
            #expect(
                (try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as! NSNumber) == 0o600)
            let group = try GroupName("g")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([7], group: group, id: id)
            #expect(
                try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: keyPath)).get(group: group, id: id)
                    == [7]
            )
            // Without the key file the vault is locked, and the message names the ways to give the key.
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .locked)
            #expect(error?.message.contains("--key-file") == true)
            #expect(error?.message.contains("LoadCredential") == true)
            // Another vault's key file fails the marker check.
            try withTemporaryVault("store") { other in
                _ = try VaultStore.create(at: other.path)
                #expect(throws: StoreError.self) {
                    _ = try VaultStore.open(at: other.path, keySource: KeySource(keyFile: keyPath))
                }
            }
        }
    }

    @Test func anExistingKeyFileIsUsedByInit() throws {
        try withTemporaryVault("store") { vault in
            let keyPath = vault.root + "/given.key"
            let key = [UInt8](repeating: 9, count: 32)
            _ = FileManager.default.createFile(
                atPath: keyPath, contents: Data(key), attributes: [.posixPermissions: 0o400])
            _ = try VaultStore.create(at: vault.path, keySource: KeySource(keyFile: keyPath))
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: keyPath))) == key)
            _ = try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: keyPath))
        }
    }

    @Test func unsafeOrWrongExternalKeyFilesAreRefused() throws {
        try withTemporaryVault("store") { vault in
            let keyPath = vault.root + "/vault.key"
            _ = try VaultStore.create(at: vault.path, keySource: KeySource(keyFile: keyPath))
            let source = KeySource(keyFile: keyPath)
            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: keyPath)
            var error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path, keySource: source) }
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("chmod 600") == true)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyPath)
            try FileManager.default.moveItem(atPath: keyPath, toPath: keyPath + ".real")
            try FileManager.default.createSymbolicLink(atPath: keyPath, withDestinationPath: keyPath + ".real")
            error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path, keySource: source) }
            #expect(error?.code == .insecureFile)
            try FileManager.default.removeItem(atPath: keyPath)
            _ = FileManager.default.createFile(
                atPath: keyPath, contents: Data([UInt8](repeating: 1, count: 31)),
                attributes: [.posixPermissions: 0o600])
            error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path, keySource: source) }
            #expect(error?.code == .integrity)
        }
    }

    /// A service started with `LoadCredential=vault.key:…` finds its key in $CREDENTIALS_DIRECTORY.
    @Test func theEnvironmentNamesTheKeyFile() throws {
        try withTemporaryVault("store") { vault in
            let credentials = vault.root + "/run-credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
            #expect(KeySource.fromEnvironment(["CREDENTIALS_DIRECTORY": credentials]).keyFile == nil)
            _ = FileManager.default.createFile(
                atPath: credentials + "/vault.key", contents: Data([UInt8](repeating: 3, count: 32)),
                attributes: [.posixPermissions: 0o400])
            let fromCredentials = KeySource.fromEnvironment(["CREDENTIALS_DIRECTORY": credentials])
            #expect(fromCredentials.keyFile == credentials + "/vault.key")
            #expect(
                KeySource.fromEnvironment(["VAULT_KEY_FILE": "/k", "CREDENTIALS_DIRECTORY": credentials]).keyFile
                    == "/k")
            #expect(KeySource.fromEnvironment([:]).keyFile == nil)
            _ = try VaultStore.create(at: vault.path, keySource: fromCredentials)
            _ = try VaultStore.open(at: vault.path, keySource: fromCredentials)
        }
    }
}

@Suite struct UnlockCacheTests {
    @Test func unlockGivesOtherOpensTheClassKeysUntilLockOrTimeout() throws {
        try withTemporaryVault("store") { vault in
            defer {
                _ = try? VaultStore.lock(at: vault.path)
            }
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let group = try GroupName("g")
            let ids = try [1, 2, 3].map { try store.itemID(group: group, primaryKey: [UInt8($0)]) }
            try store.put([0], group: group, id: ids[0], protectionClass: .always)
            try store.put([1], group: group, id: ids[1], protectionClass: .afterFirstUnlock)
            try store.put([2], group: group, id: ids[2], protectionClass: .whenUnlocked)
            func readable() throws -> [Bool] {
                let opened = try VaultStore.open(at: vault.path)
                return ids.map { (try? opened.get(group: group, id: $0)) != nil }
            }
            #expect(try readable() == [true, false, false])
            try VaultStore.unlock(at: vault.path, keySource: passphrase("pw"), timeoutSeconds: 60)
            #expect(try readable() == [true, true, true])
            // `lock` drops the WhenUnlocked key; the AfterFirstUnlock key stays until reboot.
            #expect(try VaultStore.lock(at: vault.path) == true)
            #expect(try VaultStore.lock(at: vault.path) == false)
            #expect(try readable() == [true, true, false])
            // The timeout drops the WhenUnlocked key by itself.
            try VaultStore.unlock(at: vault.path, keySource: passphrase("pw"), timeoutSeconds: 1)
            #expect(try readable() == [true, true, true])
            Thread.sleep(forTimeInterval: 2.2)
            #expect(try readable() == [true, true, false])
            // A wrong passphrase caches nothing.
            let wrong = #expect(throws: StoreError.self) {
                try VaultStore.unlock(at: vault.path, keySource: passphrase("nope"), timeoutSeconds: 60)
            }
            #expect(wrong?.code == .wrongPassphrase)
            #expect(try readable() == [true, true, false])
        }
    }

    @Test func aWrongCachedKeyIsIgnored() throws {
        try withTemporaryVault("store") { vault in
            defer {
                _ = try? VaultStore.lock(at: vault.path)
            }
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let bogus = try SymmetricKey.random()
            try UnlockCache.store(
                bogus, vaultID: store.vaultID, .afterFirstUnlock, timeoutSeconds: 60, path: FilePath(vault.path))
            try UnlockCache.store(
                bogus, vaultID: store.vaultID, .whenUnlocked, timeoutSeconds: 60, path: FilePath(vault.path))
            let locked = try VaultStore.open(at: vault.path)
            #expect(!locked.isAvailable(.afterFirstUnlock) && !locked.isAvailable(.whenUnlocked))
            #expect(try VaultStore.open(at: vault.path, keySource: passphrase("pw")).isAvailable(.whenUnlocked))
        }
    }
}

/// A seccomp profile or a container can forbid keyctl: simulated through the fault seam.
@Suite struct KeyringUnavailableTests {
    @Test(arguments: [Errno.notImplemented, Errno.notPermitted])
    func unlockSaysTheKeyringIsUnavailableAndThePassphraseStillWorks(errno: Errno) throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let group = try GroupName("g")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([42], group: group, id: id, protectionClass: .whenUnlocked)
            let plan = FaultPlan(.keyring, occurrence: 1, effect: .fail(errno), persistent: true)
            try FaultInjection.withPlan(plan) {
                let error = #expect(throws: StoreError.self) {
                    try VaultStore.unlock(at: vault.path, keySource: passphrase("pw"), timeoutSeconds: 60)
                }
                #expect(error?.message.contains("kernel keyring is not available") == true)
                #expect(error?.message.contains("passphrase") == true)
                #expect(error?.errno == errno)
                // Reading the cache fails the same way: it counts as empty, never as an error.
                let locked = try VaultStore.open(at: vault.path)
                #expect(throws: StoreError.self) { _ = try locked.get(group: group, id: id) }
                #expect(
                    try VaultStore.open(at: vault.path, keySource: passphrase("pw")).get(group: group, id: id) == [42])
            }
            #expect(plan.injectedCount >= 2)
        }
    }
}
