import Foundation
import Testing
import VaultCrypto
import VaultTestSupport

@testable import VaultStore

@Suite struct VaultLayoutTests {
    @Test func createMakesTheLayoutWithTheRightModes() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            #expect(store.vaultID.count == 16)
            #expect(try vault.mode("") == 0o700)
            #expect(try vault.mode("master.key") == 0o600)
            #expect(try vault.bytes("master.key").count == 32)
            // Members of shared groups read the marker's vault id.
            #expect(try vault.mode("VAULT") == 0o644)
            #expect(try vault.bytes("VAULT").count == VaultMarker.byteCount)
            #expect(Array(try vault.bytes("VAULT")[0..<5]) == Array("VLTV".utf8) + [2])
            #expect(try vault.mode("classes.key") == 0o600)
            #expect(try vault.mode("groups") == 0o700)
            #expect(try vault.mode(".lock") == 0o600)
            // No temp file is left behind by init.
            #expect(try vault.entries("") == [".lock", "VAULT", "classes.key", "groups", "master.key"])
            let reopened = try VaultStore.open(at: vault.path)
            #expect(reopened.vaultID == store.vaultID)
        }
    }

    @Test func createMakesMissingParents() throws {
        try withTemporaryVault("store") { vault in
            let nested = vault.root + "/a/b/c/vault"
            _ = try VaultStore.create(at: nested)
            _ = try VaultStore.open(at: nested)
        }
    }

    @Test func createAcceptsAnEmptyExistingDirectory() throws {
        try withTemporaryVault("store") { vault in
            try FileManager.default.createDirectory(
                atPath: vault.path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            _ = try VaultStore.create(at: vault.path)
        }
    }

    @Test func reinitialisingIsRefusedAndChangesNothing() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let group = try GroupName("g")
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([9, 9], group: group, id: id)
            let key = try vault.bytes("master.key")
            let marker = try vault.bytes("VAULT")
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.create(at: vault.path) }
            #expect(error?.code == .vaultAlreadyExists)
            #expect(error?.message.contains(vault.path) == true)
            #expect(try vault.bytes("master.key") == key)
            #expect(try vault.bytes("VAULT") == marker)
            let again = try VaultStore.open(at: vault.path)
            #expect(try again.get(group: group, id: id) == [9, 9])
        }
    }

    /// Many inits race on one path: exactly one wins, every other is refused, and the vault opens with
    /// the winner's key.
    @Test func concurrentInitsHaveExactlyOneWinner() async throws {
        for _ in 0..<10 {
            try await withTemporaryVault("store") { vault in
                let outcomes = await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            do {
                                _ = try VaultStore.create(at: vault.path)
                                return true
                            } catch {
                                #expect((error as? StoreError)?.code == .vaultAlreadyExists, "\(error)")
                                return false
                            }
                        }
                    }
                    var wins = 0
                    for await won in group where won { wins += 1 }
                    return wins
                }
                #expect(outcomes == 1)
                _ = try VaultStore.open(at: vault.path)
                #expect(try vault.entries("").filter { $0.hasPrefix(".tmp") }.isEmpty)
            }
        }
    }

    @Test func anInterruptedInitIsReportedAndCompletedByTheNextInit() throws {
        try withTemporaryVault("store") { vault in
            _ = try VaultStore.create(at: vault.path)
            let key = try vault.bytes("master.key")
            try FileManager.default.removeItem(atPath: vault.file("VAULT"))
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .vaultNotFound)
            #expect(error?.message.contains("incomplete") == true)
            _ = try VaultStore.create(at: vault.path)
            #expect(try vault.bytes("master.key") == key)
            _ = try VaultStore.open(at: vault.path)
        }
    }

    @Test func openingWhereThereIsNoVault() throws {
        try withTemporaryVault("store") { vault in
            var error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .vaultNotFound)
            #expect(error?.message.contains("vault init") == true)
            try FileManager.default.createDirectory(atPath: vault.path, withIntermediateDirectories: false)
            try vault.chmod("", 0o700)
            error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .vaultNotFound)
        }
    }

    @Test func defaultLocation() {
        #expect(VaultLocation.defaultPath(environment: ["VAULT_DIR": "/srv/v"]) == "/srv/v")
        let fallback = VaultLocation.defaultPath(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/x"])
        if getuid() == 0 {
            #expect(fallback == "/var/lib/vault")
        } else {
            #expect(fallback == "/x/vault")
            #expect(VaultLocation.defaultPath(environment: ["HOME": "/home/u"]) == "/home/u/.local/share/vault")
        }
    }
}

/// Each refused master-key and directory condition has its own test; each message names the file and
/// the fix.
@Suite struct OpeningRefusalTests {
    func withMadeVault<R>(_ body: (TemporaryVault) throws -> R) throws -> R {
        try withTemporaryVault("store") { vault in
            _ = try VaultStore.create(at: vault.path)
            return try body(vault)
        }
    }

    func refusal(_ vault: TemporaryVault) -> StoreError? {
        #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
    }

    @Test func masterKeyReadableByGroup() throws {
        try withMadeVault { vault in
            try vault.chmod("master.key", 0o640)
            let error = refusal(vault)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains(vault.file("master.key")) == true)
            #expect(error?.message.contains("chmod 600") == true)
        }
    }

    @Test func masterKeyReadableByOthers() throws {
        try withMadeVault { vault in
            try vault.chmod("master.key", 0o604)
            #expect(refusal(vault)?.code == .insecureFile)
        }
    }

    @Test func masterKeyReadOnlyForOwnerIsFine() throws {
        try withMadeVault { vault in
            try vault.chmod("master.key", 0o400)
            _ = try VaultStore.open(at: vault.path)
        }
    }

    @Test(.enabled(if: getuid() == 0, "changing a file's owner needs root"))
    func masterKeyOwnedBySomeoneElse() throws {
        try withMadeVault { vault in
            #expect(chown(vault.file("master.key"), 4242, 4242) == 0)
            let error = refusal(vault)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("owned by uid 4242") == true)
            // A chown to this user would break the owner's vault: the advice is to run as the owner.
            #expect(error?.message.contains("chown") == false)
            #expect(error?.message.contains("run vault as its owner") == true)
        }
    }

    @Test func masterKeyIsASymlink() throws {
        try withMadeVault { vault in
            try FileManager.default.moveItem(atPath: vault.file("master.key"), toPath: vault.root + "/elsewhere.key")
            try FileManager.default.createSymbolicLink(
                atPath: vault.file("master.key"), withDestinationPath: vault.root + "/elsewhere.key")
            let error = refusal(vault)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("symbolic link") == true)
            #expect(error?.message.contains(vault.file("master.key")) == true)
        }
    }

    @Test func masterKeyIsNotARegularFile() throws {
        try withMadeVault { vault in
            try FileManager.default.removeItem(atPath: vault.file("master.key"))
            try FileManager.default.createDirectory(
                atPath: vault.file("master.key"), withIntermediateDirectories: false)
            let error = refusal(vault)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("not a regular file") == true)
        }
    }

    @Test(arguments: [0, 31, 33, 64])
    func masterKeyOfTheWrongSize(size: Int) throws {
        try withMadeVault { vault in
            try vault.write([UInt8](repeating: 1, count: size), to: "master.key")
            try vault.chmod("master.key", 0o600)
            let error = refusal(vault)
            #expect(error?.code == .integrity)
            #expect(error?.message.contains("\(size) bytes") == true)
            #expect(error?.message.contains(vault.file("master.key")) == true)
        }
    }

    @Test func masterKeyMissing() throws {
        try withMadeVault { vault in
            try FileManager.default.removeItem(atPath: vault.file("master.key"))
            let error = refusal(vault)
            #expect(error?.code == .locked)
            #expect(error?.message.contains("master.key is missing") == true)
        }
    }

    @Test func masterKeyOfAnotherVault() throws {
        try withMadeVault { vault in
            try withMadeVault { other in
                try vault.write(try other.bytes("master.key"), to: "master.key")
                let error = refusal(vault)
                #expect(error?.code == .wrongKey)
                #expect(error?.message.contains("does not open the vault at \(vault.path)") == true)
                #expect(error?.message.contains("restore this vault's master.key") == true)
            }
        }
    }

    /// Making a vault under another user's symlink (the `/tmp/NEW` race, made deterministic): refused,
    /// nothing made where it points; a link of this user's own is followed.
    @Test func creatingDoesNotFollowAnotherUsersLink() throws {
        guard getuid() == 0 else { return }  // lchown to another uid needs root
        try withTemporaryDirectory("create-link") { directory in
            let target = directory.path + "/target"
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            let link = directory.path + "/NEW"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
            #expect(lchown(link, 65534, 65534) == 0)
            let error = #expect(throws: StoreError.self) { try VaultStore.create(at: link + "/vault") }
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("is a symbolic link of uid 65534") == true, "\(String(describing: error))")
            #expect(!FileManager.default.fileExists(atPath: target + "/vault"))
            let own = directory.path + "/OWN"
            try FileManager.default.createSymbolicLink(atPath: own, withDestinationPath: target)
            _ = try? VaultStore.create(at: own + "/deeper/vault")
            #expect(FileManager.default.fileExists(atPath: target + "/deeper"))
        }
    }

    /// A marker altered under the right key is damage, not a wrong key: classes.key still opens.
    @Test func anAlteredMarkerUnderTheRightKey() throws {
        try withMadeVault { vault in
            var marker = try vault.bytes("VAULT")
            marker[marker.count - 1] ^= 1
            try vault.write(marker, to: "VAULT")
            let error = refusal(vault)
            #expect(error?.code == .integrity)
            #expect(error?.message.contains("does not match master.key") == true)
        }
    }

    /// Another vault's key file is a wrong key, as a wrong passphrase is.
    @Test func aKeyFileOfAnotherVault() throws {
        try withTemporaryVault("key-file-wrong") { vault in
            let right = vault.path + ".right.key"
            let wrong = vault.path + ".wrong.key"
            defer {
                try? FileManager.default.removeItem(atPath: right)
                try? FileManager.default.removeItem(atPath: wrong)
            }
            _ = try VaultStore.create(at: vault.path, keySource: KeySource(keyFile: right))
            let bytes = try SecureRandom.bytes(count: 32)
            #expect(
                FileManager.default.createFile(
                    atPath: wrong, contents: Data(bytes), attributes: [.posixPermissions: 0o600]))
            let error = #expect(throws: StoreError.self) {
                try VaultStore.open(at: vault.path, keySource: KeySource(keyFile: wrong))
            }
            #expect(error?.code == .wrongKey)
            #expect(error?.message.contains("the key in \(wrong) does not open the vault") == true)
            #expect(error?.message.contains("give this vault's key file") == true)
        }
    }

    @Test(arguments: [0o770, 0o720, 0o702, 0o777])
    func vaultDirectoryWritableByOthers(mode: Int) throws {
        try withMadeVault { vault in
            try vault.chmod("", mode)
            let error = refusal(vault)
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("chmod 700") == true)
            #expect(error?.message.contains(vault.path) == true)
        }
    }

    @Test func vaultDirectoryIsASymlink() throws {
        try withMadeVault { vault in
            let link = vault.root + "/link"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: vault.path)
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: link) }
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("symbolic link") == true)
            #expect(error?.message.contains(link) == true)
        }
    }

    @Test func vaultPathIsAFile() throws {
        try withTemporaryVault("store") { vault in
            try Data([1]).write(to: URL(fileURLWithPath: vault.path))
            let error = #expect(throws: StoreError.self) { _ = try VaultStore.open(at: vault.path) }
            #expect(error?.code == .insecureFile)
            #expect(error?.message.contains("not a directory") == true)
        }
    }

    @Test func unknownFormatVersion() throws {
        try withMadeVault { vault in
            var marker = try vault.bytes("VAULT")
            marker[4] = 3
            try vault.write(marker, to: "VAULT")
            let error = refusal(vault)
            #expect(error?.code == .unsupportedFormat)
            #expect(error?.message.contains("format version 3") == true)
            #expect(error?.message.contains("reads versions 1 to 2") == true)
        }
    }

    @Test func markerEveryBitFlipIsDetected() throws {
        try withMadeVault { vault in
            let marker = try vault.bytes("VAULT")
            for bit in 0..<(marker.count * 8) {
                var damaged = marker
                damaged[bit / 8] ^= UInt8(1 << (bit % 8))
                try vault.write(damaged, to: "VAULT")
                let error = refusal(vault)
                #expect(error?.code == .integrity || error?.code == .unsupportedFormat, "bit \(bit)")
            }
            try vault.write(marker, to: "VAULT")
            _ = try VaultStore.open(at: vault.path)
        }
    }

    @Test func markerTruncations() throws {
        try withMadeVault { vault in
            let marker = try vault.bytes("VAULT")
            for length in 0..<marker.count {
                try vault.write(Array(marker[0..<length]), to: "VAULT")
                #expect(refusal(vault)?.code == .integrity, "length \(length)")
            }
        }
    }
}
