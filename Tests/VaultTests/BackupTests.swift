import Foundation
import Testing
import VaultCrypto
import VaultStore
import VaultTestSupport

@testable import Vault

@Suite struct BackupTests {
    func pass(_ text: String) -> SecureBytes {
        try! Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    @Test func exportThenImportKeepsAttributesDatesAndReferences() throws {
        try withTemporaryVault { source in
            try withTemporaryVault { target in
                let vault = try source.open(groups: ["team.shared", "com.example.app"])
                var generic = genp("svc", "alice", group: "team.shared")
                generic.label = "label"
                generic.comment = "comment"
                generic.generic = Data([1, 2, 3])
                let added = try vault.add(.genericPassword, attributes: generic, data: Data("one"))
                var internet = ItemAttributes()
                internet.account = "bob"
                internet.server = "example.com"
                internet.`protocol` = "htps"
                internet.port = 443
                try vault.add(.internetPassword, attributes: internet, data: Data([0, 255, 0]))
                var local = genp("device", "only")
                local.accessible = .afterFirstUnlockThisDeviceOnly
                try vault.add(.genericPassword, attributes: local, data: Data("stays here"))
                var synced = genp("svc", "alice")
                synced.synchronizable = true
                try vault.add(.genericPassword, attributes: synced, data: Data("synced"))

                let backup = source.root + "/backup.vault"
                let report = try vault.export(to: backup, passphrase: pass("backup pw"), limits: .minimum)
                #expect(report == ExportReport(exported: 3, leftOut: 1))
                let bytes = try Data(contentsOf: URL(fileURLWithPath: backup))
                #expect(!bytes.contains(Data("one".utf8)) && !bytes.contains(Data("alice".utf8)))
                #expect(
                    (try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as! NSNumber) == 0o600)
                // A backup never overwrites a file.
                #expect(
                    status { _ = try vault.export(to: backup, passphrase: self.pass("x"), limits: .minimum) }
                        == .duplicateVault
                )

                let restored = try target.open(groups: ["team.shared", "com.example.app"])
                let imported = try restored.importBackup(from: backup, passphrase: pass("backup pw"))
                var expected = ImportReport(imported: 3, replaced: 0, duplicates: [])
                expected.madeGroups = ["group team.shared, private"]
                #expect(imported == expected)
                let item = try restored.copyMatching(
                    .genericPassword(service: "svc", account: "alice"), returning: [.data, .attributes])[0]
                #expect(item.data == Data("one"))
                #expect(item.attributes.label == "label" && item.attributes.comment == "comment")
                #expect(item.attributes.generic == Data([1, 2, 3]))
                #expect(item.attributes.accessGroup?.rawValue == "team.shared")
                #expect(item.attributes.creationDate == added.attributes.creationDate)
                #expect(item.attributes.modificationDate == added.attributes.modificationDate)
                // The persistent reference made in the old vault finds the item in the new one.
                let byReference = try restored.copyMatching(
                    Query(itemClass: nil, persistentReference: added.persistentReference), returning: .data)
                #expect(byReference.first?.data == Data("one"))
                var inet = Query(itemClass: .internetPassword)
                inet.attributes.server = "example.com"
                #expect(try restored.copyMatching(inet, returning: .data)[0].data == Data([0, 255, 0]))
                #expect(try restored.data(for: try ItemKey(service: "device", account: "only")) == nil)
                var anySync = Query.genericPassword(service: "svc", limit: .all)
                anySync.synchronizable = .any
                #expect(try restored.copyMatching(anySync).count == 2)
            }
        }
    }

    @Test func duplicatesAreReportedUnlessReplaced() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("original", for: try ItemKey(service: "svc", account: "a"))
            let backup = t.root + "/b"
            _ = try vault.export(to: backup, passphrase: pass("pw"), limits: .minimum)
            try vault.set("changed", for: try ItemKey(service: "svc", account: "a"))
            let report = try vault.importBackup(from: backup, passphrase: pass("pw"))
            #expect(report.imported == 0 && report.replaced == 0)
            #expect(report.duplicates.count == 1)
            #expect(report.duplicates[0].contains("\"svc\""))
            #expect(try vault.string(for: try ItemKey(service: "svc", account: "a")) == "changed")
            let replaced = try vault.importBackup(from: backup, passphrase: pass("pw"), replace: true)
            #expect(replaced.replaced == 1)
            #expect(try vault.string(for: try ItemKey(service: "svc", account: "a")) == "original")
        }
    }

    @Test func aWrongPassphraseOrADamagedBackupIsRefused() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("x", for: try ItemKey(service: "svc"))
            let backup = t.root + "/b"
            _ = try vault.export(to: backup, passphrase: pass("pw"), limits: .minimum)
            #expect(status { _ = try vault.importBackup(from: backup, passphrase: self.pass("nope")) } == .authFailed)
            var bytes = try Data(contentsOf: URL(fileURLWithPath: backup))
            for index in [0, 10, 40, bytes.count / 2, bytes.count - 1] {
                var damaged = bytes
                damaged[index] ^= 0x10
                try damaged.write(to: URL(fileURLWithPath: backup))
                #expect(status { _ = try vault.importBackup(from: backup, passphrase: self.pass("pw")) } == .decode)
            }
            bytes.removeLast(5)
            try bytes.write(to: URL(fileURLWithPath: backup))
            #expect(status { _ = try vault.importBackup(from: backup, passphrase: self.pass("pw")) } == .decode)
        }
    }

    func keyFile(_ t: TemporaryVault, _ name: String, byte: UInt8) throws -> String {
        let path = t.root + "/" + name
        _ = FileManager.default.createFile(
            atPath: path, contents: Data(repeating: byte, count: 32), attributes: [.posixPermissions: 0o600])
        return path
    }

    @Test func aBackupSealedUnderAKeyFileRoundTripsInMemoryAndOnDisk() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("x", for: try ItemKey(service: "svc"))
            let key = try BackupKey.keyFile(try keyFile(t, "backup.key", byte: 1))
            let sealed = try vault.sealedBackup(key: key)
            #expect(sealed.report == ExportReport(exported: 1, leftOut: 0))
            // kdf 2, and no Argon2id cost in the header.
            #expect(sealed.bytes[5] == 2 && sealed.bytes[8..<20].allSatisfy { $0 == 0 })
            #expect(try Vault.inspectBackup(header: Array(sealed.bytes.prefix(60)), name: "stream") == .keyFile)
            #expect(try Vault.checkBackup(sealed.bytes, name: "stream") == .keyFile)
            try withTemporaryVault { other in
                let restored = try other.open()
                #expect(try restored.importBackup(sealed: sealed.bytes, name: "stream", key: key).imported == 1)
                #expect(try restored.data(for: try ItemKey(service: "svc")) == Data("x"))
                // The same through a file, and the wrong key, or a passphrase, does not open it.
                let path = t.root + "/backup"
                _ = try vault.export(to: path, key: key)
                #expect(try Vault.inspectBackup(at: path) == .keyFile)
                let wrong = try BackupKey.keyFile(try keyFile(t, "other.key", byte: 2))
                #expect(status { _ = try restored.importBackup(from: path, key: wrong) } == .authFailed)
                #expect(status { _ = try restored.importBackup(from: path, passphrase: self.pass("x")) } == .param)
                #expect(try restored.importBackup(from: path, key: key, replace: true).replaced == 1)
                // A passphrase backup is not opened with a key file.
                let passphrased = t.root + "/passphrased"
                _ = try vault.export(to: passphrased, passphrase: pass("pw"), limits: .minimum)
                #expect(try Vault.inspectBackup(at: passphrased) == .passphrase)
                #expect(status { _ = try restored.importBackup(from: passphrased, key: key) } == .param)
            }
        }
    }

    @Test func aKeyFileBackupHeaderWithACostIsDamage() throws {
        try withTemporaryVault { t in
            let vault = try t.open()
            try vault.set("x", for: try ItemKey(service: "svc"))
            var sealed = try vault.sealedBackup(key: try BackupKey.keyFile(try keyFile(t, "k", byte: 3))).bytes
            sealed[11] = 3  // an Argon2id pass count where a key-file backup has none
            #expect(status { _ = try Vault.inspectBackup(header: Array(sealed.prefix(60)), name: "b") } == .decode)
        }
    }
}
