import Foundation
import Testing
import VaultCrypto
import VaultStore

@testable import Vault

@Suite struct BackupTests {
    func pass(_ text: String) -> SecureBytes {
        try! Array(text.utf8).withUnsafeBytes { try SecureBytes(copying: $0) }
    }

    @Test func exportThenImportKeepsAttributesDatesAndReferences() throws {
        let source = try TestVault()
        defer { source.remove() }
        let target = try TestVault()
        defer { target.remove() }
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
        #expect((try FileManager.default.attributesOfItem(atPath: backup)[.posixPermissions] as! NSNumber) == 0o600)
        // A backup never overwrites a file.
        #expect(
            status { _ = try vault.export(to: backup, passphrase: self.pass("x"), limits: .minimum) } == .duplicateVault
        )

        let restored = try target.open(groups: ["team.shared", "com.example.app"])
        let imported = try restored.importBackup(from: backup, passphrase: pass("backup pw"))
        #expect(imported == ImportReport(imported: 3, replaced: 0, duplicates: []))
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

    @Test func duplicatesAreReportedUnlessReplaced() throws {
        let t = try TestVault()
        defer { t.remove() }
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

    @Test func aWrongPassphraseOrADamagedBackupIsRefused() throws {
        let t = try TestVault()
        defer { t.remove() }
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
