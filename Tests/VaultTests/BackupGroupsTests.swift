import Foundation
import Testing
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

#if canImport(Glibc)
    import Glibc
#endif

/// Export and import carry each group's sharing (backup version 2): a missing shared group is made
/// shared with the same Unix group, or the import is refused with the fix; never made private in
/// silence. Old (version-1) backups still import. As root, with throwaway Unix groups.
@Suite(.enabled(if: canManageAccounts, "needs root and the shadow tools"), .serialized)
struct BackupGroupsTests {
    let client = try! Client(applicationIdentifier: "owner", accessGroups: ["db", "web"])

    /// A backup key file at `path` (32 bytes, 0600).
    func makeKeyFile(_ path: String) throws -> BackupKey {
        try Data((0..<32).map { UInt8($0 &* 7) }).write(to: URL(fileURLWithPath: path))
        try #require(chmod(path, 0o600) == 0)
        return try BackupKey.keyFile(path)
    }

    /// A backup at `root/backup.vbk` of a vault with `db` shared with `gid` (one item) and
    /// `web` private (one item), sealed under `root/backup.key`.
    func makeBackup(in root: String, sharedWith gid: UInt32) throws -> (path: String, key: BackupKey) {
        let key = try makeKeyFile(root + "/backup.key")
        let source = try Vault.create(at: root + "/source", client: client)
        try source.createGroup(try AccessGroup("db"), unixGroup: gid)
        try source.set(Data("pg".utf8), for: try ItemKey(service: "postgres", account: "app", group: AccessGroup("db")))
        try source.set(Data("cdn".utf8), for: try ItemKey(service: "cdn", account: "key", group: AccessGroup("web")))
        let path = root + "/backup.vbk"
        _ = try source.export(to: path, key: key)
        return (path, key)
    }

    /// `group`'s sharing in `vault`, and the group and mode of its directory.
    func sharing(_ vault: Vault, _ group: String) throws -> (shared: Bool?, gid: UInt32?, mode: UInt32) {
        let info = try #require(try vault.listGroups().groups.first { $0.group.rawValue == group })
        var status = stat()
        try #require(stat(vault.path + "/groups/" + group, &status) == 0)
        return (info.isShared, info.unixGroupID, UInt32(status.st_mode) & 0o7777)
    }

    func import_(_ backup: (path: String, key: BackupKey), into vault: Vault, groupFile: String = "/etc/group")
        throws -> ImportReport
    {
        try vault.importBackup(
            from: backup.path, key: backup.key, replace: false, costCeiling: .sensitive, groupFile: groupFile)
    }

    @Test func aSharedGroupIsMadeSharedWithTheSameUnixGroup() throws {
        try withThrowawayAccounts(users: 0, groups: 1) { _, groups in
            try withTemporaryDirectory("backup-groups") { t in
                let backup = try makeBackup(in: t.path, sharedWith: groups[0].gid)
                let target = try Vault.create(at: t.path + "/target", client: client)
                let report = try import_(backup, into: target)
                #expect(report.imported == 2)
                #expect(
                    report.madeGroups == [
                        "group db, shared with Unix group \(groups[0].name) (gid \(groups[0].gid))",
                        "group web, private",
                    ])
                let db = try sharing(target, "db")
                #expect(db.shared == true && db.gid == groups[0].gid && db.mode == 0o2770)
                #expect(try sharing(target, "web").shared == false)
                let key = try ItemKey(service: "postgres", account: "app", group: AccessGroup("db"))
                #expect(try target.data(for: key) == Data("pg".utf8))
                // Imported again, nothing is made: both groups exist, as the backup has them.
                let again = try import_(backup, into: target)
                #expect(again.madeGroups.isEmpty && again.differingGroups.isEmpty && again.duplicates.count == 2)
            }
        }
    }

    /// The Unix group's name is resolved first: on another machine the same name can have another gid,
    /// and the same gid can be another group.
    @Test func theUnixGroupIsFoundByItsNameFirst() throws {
        try withThrowawayAccounts(users: 0, groups: 2) { _, groups in
            try withTemporaryDirectory("backup-groups") { t in
                let backup = try makeBackup(in: t.path, sharedWith: groups[0].gid)
                // This "machine" lists the name with the other group's gid.
                let groupFile = t.path + "/group"
                try Data("\(groups[0].name):x:\(groups[1].gid):\n".utf8).write(to: URL(fileURLWithPath: groupFile))
                let target = try Vault.create(at: t.path + "/target", client: client)
                _ = try import_(backup, into: target, groupFile: groupFile)
                let db = try sharing(target, "db")
                #expect(db.shared == true && db.gid == groups[1].gid)
            }
        }
    }

    @Test func aUnixGroupThatIsNotHereIsRefusedWithTheFix() throws {
        try withThrowawayAccounts(users: 0, groups: 1) { _, groups in
            try withTemporaryDirectory("backup-groups") { t in
                let backup = try makeBackup(in: t.path, sharedWith: groups[0].gid)
                let groupFile = t.path + "/group"
                // The gid is here, under another name: it is not the group the backup was shared with.
                try Data("someone-else:x:\(groups[0].gid):\n".utf8).write(to: URL(fileURLWithPath: groupFile))
                let target = try Vault.create(at: t.path + "/target", client: client)
                let refused = #expect(throws: VaultError.self) {
                    try import_(backup, into: target, groupFile: groupFile)
                }
                #expect(refused?.status == .param)
                let message = refused?.message ?? ""
                #expect(message.contains("group db") && message.contains(groups[0].name), "\(message)")
                #expect(message.contains("groupadd \(groups[0].name)") && message.contains("vault group create db"))
                #expect(message.contains("nothing was imported"))
                // Nothing was made or imported: not the shared group, not the private one, no item.
                #expect(try target.listGroups().groups.filter(\.isPresent).isEmpty)
            }
        }
    }

    /// A Unix group that /etc/group did not list where the backup was made (a directory service's) is
    /// recorded by gid alone, and made with that gid.
    @Test func aGroupWithoutANameIsMadeWithItsGid() throws {
        let gid = try #require((54321..<54400).first { UserDatabase.group(id: UInt32($0)) == nil })
        try withTemporaryDirectory("backup-groups") { t in
            let backup = try makeBackup(in: t.path, sharedWith: UInt32(gid))
            let target = try Vault.create(at: t.path + "/target", client: client)
            let report = try import_(backup, into: target)
            #expect(report.madeGroups.first == "group db, shared with Unix group gid \(gid)")
            let db = try sharing(target, "db")
            #expect(db.shared == true && db.gid == UInt32(gid) && db.mode == 0o2770)
        }
    }

    /// A group that exists keeps its own sharing; the import says where it differs from the backup.
    @Test func anExistingGroupKeepsItsSharingAndTheDifferenceIsReported() throws {
        try withThrowawayAccounts(users: 0, groups: 1) { _, groups in
            try withTemporaryDirectory("backup-groups") { t in
                let backup = try makeBackup(in: t.path, sharedWith: groups[0].gid)
                let target = try Vault.create(at: t.path + "/target", client: client)
                try target.createGroup(try AccessGroup("db"), unixGroup: nil)
                let report = try import_(backup, into: target)
                #expect(report.madeGroups == ["group web, private"])
                #expect(report.differingGroups.count == 1)
                #expect(report.differingGroups.first?.hasPrefix("group db is private here but was shared") == true)
                #expect(try sharing(target, "db").shared == false)
                #expect(report.imported == 2)
            }
        }
    }

    /// A backup made by the build before groups were recorded (version 1, `Fixtures/v1-backup`: items
    /// in `com.example.app` and `team.shared`, sealed under the key file beside it) still imports, its
    /// groups private.
    @Test func aVersionOneBackupStillImports() throws {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Fixtures/v1-backup"
        ).path
        try withTemporaryDirectory("backup-v1") { t in
            try FileManager.default.copyItem(atPath: fixtures + "/backup.key", toPath: t.path + "/backup.key")
            try #require(chmod(t.path + "/backup.key", 0o600) == 0)
            let key = try BackupKey.keyFile(t.path + "/backup.key")
            let client = try Client(applicationIdentifier: "x", accessGroups: ["com.example.app", "team.shared"])
            let target = try Vault.create(at: t.path + "/target", client: client)
            let report = try target.importBackup(from: fixtures + "/backup.vbk", key: key)
            #expect(report.imported == 2 && report.madeGroups.isEmpty)
            let pg = try ItemKey(service: "postgres", account: "app", group: AccessGroup("com.example.app"))
            #expect(try target.data(for: pg) == Data("pg".utf8))
            let cache = try ItemKey(service: "cache", account: "key", group: AccessGroup("team.shared"))
            #expect(try target.data(for: cache) == Data("shared".utf8))
            #expect(try sharing(target, "team.shared").shared == false)
        }
    }
}
