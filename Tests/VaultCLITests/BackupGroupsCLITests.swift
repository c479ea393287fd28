import Foundation
import Testing
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// `vault export` and `vault import` of a vault with a shared group, from the command line (as root,
/// with throwaway Unix accounts): the import makes the group shared with the same Unix group and says
/// so, a member uses it, and the imports that cannot do that are refused with the fix.
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct BackupGroupsCLITests {
    /// A vault in `scratch` with `db` shared with `unix` and one item in it, exported under the
    /// backup key file `scratch.root/backup.key` to `scratch.root/backup.vbk`.
    func exportSharedGroup(_ scratch: Scratch, _ unix: ThrowawayGroup) throws -> (backup: String, key: [String]) {
        try #require(try scratch.run(["init"]).status == 0)
        try #require(try scratch.run(["group", "create", "db", "--unix-group", unix.name]).status == 0)
        try #require(try scratch.run(["--group", "db", "put", "pg", "app"], input: Data("s3cret")).status == 0)
        let keyFile = scratch.root + "/backup.key"
        try Data((0..<32).map { UInt8($0) }).write(to: URL(fileURLWithPath: keyFile))
        try #require(chmod(keyFile, 0o600) == 0)
        let backup = scratch.root + "/backup.vbk"
        let exported = try scratch.run(["export", "--backup-key-file", keyFile, backup])
        try #require(exported.status == 0, "\(exported.errors)")
        return (backup, ["--backup-key-file", keyFile])
    }

    @Test func theImportMakesTheSharedGroupAndAMemberUsesIt() throws {
        try withThrowawayAccounts(users: 1, groups: 1) { users, groups in
            let (member, unix) = (users[0], groups[0])
            try addMember(member, to: unix)
            try withScratch { scratch in
                let (backup, key) = try exportSharedGroup(scratch, unix)
                let target = scratch.root + "/target"
                try #require(
                    try scratch.run(["--vault", target, "init"], vaultOption: false).status == 0)
                let imported = try scratch.run(["--vault", target, "import"] + key + [backup], vaultOption: false)
                #expect(imported.status == 0, "\(imported.errors)")
                #expect(
                    imported.errors
                        == "vault: made group db, shared with Unix group \(unix.name) (gid \(unix.gid))\n"
                        + "vault: imported 1 item from \(backup)\n")
                var status = stat()
                try #require(stat(target + "/groups/db", &status) == 0)
                #expect(status.st_mode & 0o7777 == 0o2770 && status.st_gid == unix.gid)
                try makeTraversable(scratch.root)
                try withExecutableForOtherUsers(vaultExecutable.path) { binary in
                    let got = try runAs(
                        member, binary, ["--vault", target, "--group", "db", "get", "pg", "app"], environment: [:])
                    #expect(got.status == 0 && got.output == Data("s3cret".utf8), "\(got.errors)")
                }
            }
        }
    }

    @Test func anOwnerOutsideTheUnixGroupIsRefused() throws {
        try withThrowawayAccounts(users: 1, groups: 1) { users, groups in
            let (owner, unix) = (users[0], groups[0])
            try withScratch { scratch in
                let (backup, key) = try exportSharedGroup(scratch, unix)
                // A vault of a user outside the Unix group (root acts as that user): refused with the fix.
                let home = scratch.root + "/home"
                try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: false)
                try #require(chown(home, owner.uid, owner.gid) == 0)
                try makeTraversable(scratch.root)
                let owned = home + "/vault"
                try #require(
                    try scratch.run(["--vault", owned, "init"], vaultOption: false).status == 0)
                // The owner reads the backup and its key file: copies of its own.
                let ownedBackup = home + "/backup.vbk"
                let ownedKey = ["--backup-key-file", home + "/backup.key"]
                try FileManager.default.copyItem(atPath: backup, toPath: ownedBackup)
                try FileManager.default.copyItem(atPath: key[1], toPath: ownedKey[1])
                for file in [ownedBackup, ownedKey[1]] { try #require(chown(file, owner.uid, owner.gid) == 0) }
                let outside = try scratch.run(
                    ["--vault", owned, "import"] + ownedKey + [ownedBackup], vaultOption: false)
                #expect(outside.status == 4, "\(outside.errors)")
                #expect(outside.errors.contains("usermod -aG \(unix.name) \(owner.name)"), "\(outside.errors)")
                #expect(!FileManager.default.fileExists(atPath: owned + "/groups/db"))
                // Once the owner is a member, the same import makes the group shared.
                try addMember(owner, to: unix)
                let made = try scratch.run(["--vault", owned, "import"] + ownedKey + [ownedBackup], vaultOption: false)
                #expect(made.status == 0, "\(made.errors)")
                var status = stat()
                try #require(stat(owned + "/groups/db", &status) == 0)
                #expect(status.st_mode & 0o7777 == 0o2770 && status.st_gid == unix.gid && status.st_uid == owner.uid)
            }
        }
    }
}
