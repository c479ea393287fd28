import Foundation
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// Store-level pieces of the operator's path: the rekey journal that names a new key file, the
/// envelope kinds, and the kernel keyring listing behind `vault lock --all`.
@Suite struct OperatorStoreTests {
    @Test func aJournalOfAKeyFileRekeyNamesTheFileAndAuthenticatesIt() throws {
        let old = try SymmetricKey.random()
        let new = try SymmetricKey.random()
        let id = [UInt8](repeating: 5, count: 16)
        let v1 = try RekeyJournal(vaultID: id).encoded(oldAlways: old, newAlways: new)
        #expect(v1.count == 88 && v1[4] == 1)
        #expect(RekeyJournal.claimedNewKeyFile(v1) == nil)
        let path = "/etc/vault/new.key"
        var v2 = try RekeyJournal(vaultID: id, newKeyFile: path).encoded(oldAlways: old, newAlways: new)
        #expect(v2[4] == 2 && v2.count == 24 + 2 + path.utf8.count + 64)
        #expect(RekeyJournal.claimedNewKeyFile(v2) == path)
        #expect(RekeyJournal.isAuthentic(v2, under: [old]) && RekeyJournal.isAuthentic(v2, under: [new]))
        #expect(!RekeyJournal.isAuthentic(v2, under: [try SymmetricKey.random()]))
        // The path is authenticated: another path (same length) makes both tags fail.
        v2[30] ^= 1
        #expect(!RekeyJournal.isAuthentic(v2, under: [old, new]))
        #expect(RekeyJournal.maximumByteCount == 24 + 2 + 4096 + 64)
    }

    @Test func aWrappedMasterKeyNeverTakesAKeyFileButABackupDoes() throws {
        #expect(!WrappedMasterKey.envelope.acceptsRawKey && BackupFile.envelope.acceptsRawKey)
        let header = WrappedMasterKey.envelope.magic + [1, 2, 1, 0] + [UInt8](repeating: 0, count: 52)
        let error = #expect(throws: StoreError.self) {
            try WrappedMasterKey.envelope.checkHeader(header, path: "master.key", ceiling: .sensitive)
        }
        #expect(error?.code == .unsupportedFormat)
        let raw = try SymmetricKey.random()
        #expect(throws: StoreError.self) {
            _ = try WrappedMasterKey.envelope.seal([UInt8](repeating: 1, count: 32), key: .raw(raw))
        }
    }

    @Test func vaultKeysAreToldApartFromOtherKeys() {
        let id = String(repeating: "0a", count: 16)
        #expect(UnlockCache.isVaultKey("vault:\(id):afu") && UnlockCache.isVaultKey("vault:\(id):wu"))
        for other in [
            "vault:\(id):master", "vault:\(id.dropLast()):afu", "vault:\(id.uppercased()):wu", "vault::afu",
            "vault:\(id):afu:x", "other:\(id):afu", "",
        ] {
            #expect(!UnlockCache.isVaultKey(other), "\(other)")
        }
    }

    /// Lists and removes only a key of its own (other processes of this user may have theirs).
    @Test func theUserKeyringListsAVaultKeyAndRemovesItByID() throws {
        let vaultID = try SecureRandom.bytes(count: 16)
        let key = try SymmetricKey.random()
        try UnlockCache.store(key, vaultID: vaultID, .afterFirstUnlock, timeoutSeconds: 60, path: "test")
        defer { _ = try? UnlockCache.remove(vaultID: vaultID, .afterFirstUnlock, path: "test") }
        let description = UnlockCache.description(vaultID: vaultID, .afterFirstUnlock)
        let entry = try #require(try KernelKeyring.userKeys().first { $0.description == description })
        #expect(entry.type == "user" && UnlockCache.isVaultKey(entry.description))
        #expect(UnlockCache.read(vaultID: vaultID).afterFirstUnlock != nil)
        #expect(try KernelKeyring.remove(id: entry.id))
        #expect(UnlockCache.read(vaultID: vaultID).afterFirstUnlock == nil)
        #expect(try KernelKeyring.userKeys().first { $0.description == description } == nil)
    }

    @Test func unlockOfAVaultWithoutAPassphraseCachesNothing() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            #expect(try VaultStore.unlock(at: vault.path, keySource: KeySource(), timeoutSeconds: 60) == .noPassphrase)
            let cached = UnlockCache.read(vaultID: store.vaultID)
            #expect(cached.afterFirstUnlock == nil && cached.whenUnlocked == nil)
            let keyFile = vault.root + "/k"
            let external = vault.root + "/external"
            _ = try VaultStore.create(at: external, keySource: KeySource(keyFile: keyFile))
            #expect(
                try VaultStore.unlock(at: external, keySource: KeySource(keyFile: keyFile), timeoutSeconds: 60)
                    == .noPassphrase)
        }
    }

    @Test func aFullKeyringQuotaNamesTheWayOut() throws {
        try withTemporaryVault("store") { vault in
            _ = try VaultStore.create(at: vault.path, keySource: passphrase("pw"))
            let plan = FaultPlan(.keyring, occurrence: 1, effect: .fail(.diskQuotaExceeded), persistent: true)
            FaultInjection.withPlan(plan) {
                let error = #expect(throws: StoreError.self) {
                    try VaultStore.unlock(at: vault.path, keySource: passphrase("pw"), timeoutSeconds: 60)
                }
                #expect(error?.message.contains("vault lock --all") == true, "\(error?.message ?? "")")
                #expect(error?.message.contains("/proc/sys/kernel/keys/maxkeys") == true)
            }
        }
    }
}
