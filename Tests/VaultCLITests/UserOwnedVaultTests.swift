import Foundation
import Testing
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Shared groups in a vault whose owner is not root (a throwaway user "owner", whose directory holds
/// the vault, as a home directory would): its members read and write, a non-member is refused with
/// exit 4, and that holds when the vault's key is in an external key file (no `master.key` in it).
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct UserOwnedVaultTests {
    /// Runs `body` with a vault of a throwaway owner (in a directory of the owner's, made
    /// traversable) holding group `db` shared with a Unix group that the owner and `member` are in;
    /// `outsider` is in none. With `keyFile`, the vault's key is in a root-owned key file beside it.
    func withOwnedVault(
        keyFile: Bool,
        _ body: (
            _ scratch: Scratch, _ key: [String], _ binary: String, _ member: ThrowawayUser, _ outsider: ThrowawayUser,
            _ unix: ThrowawayGroup
        ) throws -> Void
    ) throws {
        try withThrowawayAccounts(users: 3, groups: 1) { users, groups in
            let (owner, member, outsider, unix) = (users[0], users[1], users[2], groups[0])
            try addMember(owner, to: unix)
            try addMember(member, to: unix)
            try withScratch { scratch in
                try #require(chown(scratch.root, owner.uid, owner.gid) == 0)
                try makeTraversable(scratch.root)
                let key = keyFile ? ["--key-file", "/tmp/vault-owned-\(UUID().uuidString).key"] : []
                defer { if keyFile { try? FileManager.default.removeItem(atPath: key[1]) } }
                // Root acts as the owner: everything in the vault is the owner's.
                let created = try scratch.run(key + ["init"])
                try #require(created.status == 0, "\(created.errors)")
                let made = try scratch.run(key + ["group", "create", "db", "--unix-group", unix.name])
                try #require(made.status == 0, "\(made.errors)")
                var vault = stat()
                try #require(stat(scratch.vault, &vault) == 0)
                #expect(vault.st_uid == owner.uid)
                var directory = stat()
                try #require(stat(scratch.vault + "/groups/db", &directory) == 0)
                #expect(directory.st_uid == owner.uid && directory.st_gid == unix.gid)
                #expect(directory.st_mode & 0o7777 == 0o2770)
                // The members' index of the group is the owner's too, of the Unix group, 0640.
                var index = stat()
                try #require(stat(scratch.vault + "/groups/.shared.\(unix.gid)", &index) == 0)
                #expect(index.st_uid == owner.uid && index.st_gid == unix.gid && index.st_mode & 0o7777 == 0o640)
                #expect(FileManager.default.fileExists(atPath: scratch.vault + "/master.key") == !keyFile)
                try withExecutableForOtherUsers(vaultExecutable.path) { binary in
                    try body(scratch, key, binary, member, outsider, unix)
                }
            }
        }
    }

    func run(_ user: ThrowawayUser, _ binary: String, _ scratch: Scratch, _ arguments: [String], input: String? = nil)
        throws -> (status: Int32, output: String, errors: String)
    {
        let result = try runAs(
            user, binary, ["--vault", scratch.vault] + arguments, environment: ["HOME": "/nonexistent"],
            input: input.map { Data($0.utf8) })
        return (result.status, String(decoding: result.output, as: UTF8.self), result.errors)
    }

    @Test(arguments: [false, true])
    func aMemberReadsAndWritesAndANonMemberIsRefused(keyFile: Bool) throws {
        try withOwnedVault(keyFile: keyFile) { scratch, key, binary, member, outsider, unix in
            let put = try run(member, binary, scratch, ["--group", "db", "put", "postgres", "app"], input: "s3cret")
            #expect(put.status == 0, "\(put.errors)")
            let get = try run(member, binary, scratch, ["--group", "db", "get", "postgres", "app"])
            #expect(get.status == 0 && get.output == "s3cret", "\(get.errors)")
            let ls = try run(member, binary, scratch, ["--group", "db", "group", "ls"])
            #expect(ls.status == 0 && ls.output.hasPrefix("db\tshared\t\(unix.name)\t1\tyes\t"), "\(ls.errors)")
            // The owner (root acting as the owner) reads what the member wrote, and the member what the
            // owner wrote.
            let owned = try scratch.run(key + ["--group", "db", "get", "postgres", "app"])
            #expect(owned.status == 0 && owned.output == Data("s3cret".utf8), "\(owned.errors)")
            #expect(try scratch.run(key + ["--group", "db", "put", "redis", "app"], input: Data("r")).status == 0)
            let other = try run(member, binary, scratch, ["--group", "db", "get", "redis", "app"])
            #expect(other.status == 0 && other.output == "r", "\(other.errors)")
            // A non-member is refused by the kernel, exit 4, naming the group and the fix; it learns
            // no item and no count.
            for arguments in [["--group", "db", "get", "postgres", "app"], ["--group", "db", "ls"]] {
                let refused = try run(outsider, binary, scratch, arguments)
                #expect(refused.status == 4, "\(arguments): \(refused.status) \(refused.errors)")
                #expect(refused.errors.contains("usermod -aG \(unix.name)"), "\(refused.errors)")
                #expect(!refused.output.contains("postgres"))
            }
            let listed = try run(outsider, binary, scratch, ["--group", "db", "group", "ls"])
            #expect(listed.output.hasPrefix("db\tshared\t\(unix.name)\t-\tno\t"), "\(listed.output) \(listed.errors)")
            // The member is no owner: whole-vault operations stay the owner's.
            let create = try run(member, binary, scratch, ["group", "create", "web"])
            #expect(create.status == 4, "\(create.errors)")
        }
    }

    /// Trusting the vault's owner is no more than that: a parent directory of a third user (who could
    /// swap the vault for one of theirs) still refuses the member's open, naming it.
    @Test func aParentOfAnotherUserStillRefusesTheMember() throws {
        try withOwnedVault(keyFile: false) { scratch, _, binary, member, outsider, _ in
            #expect(try run(member, binary, scratch, ["--group", "db", "put", "a", "b"], input: "x").status == 0)
            try #require(chown(scratch.root, outsider.uid, outsider.gid) == 0)
            let refused = try run(member, binary, scratch, ["--group", "db", "get", "a", "b"])
            #expect(refused.status == 4, "\(refused.errors)")
            #expect(refused.errors.contains("belongs to uid \(outsider.uid)"), "\(refused.errors)")
            #expect(refused.output.isEmpty)
        }
    }
}
