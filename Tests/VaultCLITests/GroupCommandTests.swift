import Foundation
import Testing
import Vault
import VaultSystem
import VaultTestSupport

@testable import VaultCLI

#if canImport(Glibc)
    import Glibc
#endif

/// A group of /etc/group that a shared group can be given to: "nogroup", else gid 65534's.
let existingUnixGroup = UserDatabase.group(named: "nogroup") ?? UserDatabase.group(id: 65534)

/// `vault init`, `vault group create|ls|rm`: access groups from the command line.
@Suite struct GroupCommandTests {
    /// A scratch directory with a vault.
    func withVault<R>(_ body: (Scratch) throws -> R) throws -> R {
        try withScratch { scratch in
            let created = try scratch.run(["init"])
            try #require(created.status == 0, "\(created.errors)")
            return try body(scratch)
        }
    }

    /// The permission bits (with set-gid) and the group of `path`.
    func status(_ path: String) throws -> (mode: UInt32, groupID: UInt32) {
        var status = stat()
        try #require(stat(path, &status) == 0, "stat \(path): \(Errno(rawValue: errno))")
        return (UInt32(status.st_mode) & 0o7777, UInt32(status.st_gid))
    }

    /// `group ls --json`, parsed.
    func listed(_ scratch: Scratch, _ prefix: [String] = []) throws -> [[String: Any]] {
        let ls = try scratch.run(prefix + ["group", "ls", "--json"])
        #expect(ls.status == 0, "\(ls.errors)")
        return try #require(try ls.json() as? [[String: Any]])
    }

    // MARK: init

    /// `vault init` makes a vault whose groups have keys of their own: `group create` works at once, and
    /// there is no format to choose.
    @Test func initMakesAVaultWithAKeyPerGroupAndTakesNoFormat() throws {
        try withScratch { scratch in
            let result = try scratch.run(["init", "--format", "1"])
            #expect(result.status == 2, "\(result.errors)")
            #expect(result.errors.contains("--format"), "\(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault), "a vault was made")
        }
        try withScratch { scratch in
            #expect(try scratch.run(["init"]).status == 0)
            let create = try scratch.run(["group", "create", "db"])
            #expect(create.status == 0, "\(create.errors)")
            #expect(FileManager.default.fileExists(atPath: scratch.vault + "/groups/db/group.key"))
        }
    }

    @Test func theHelpOfInitSaysEachGroupHasItsOwnKeyAndRekeyKeepsItsItemFiles() throws {
        let details = try #require(ArgumentParser.commandTable.command("init")).details
        #expect(!details.contains("--format") && details.contains("its own key"))
        #expect(!details.contains("cannot rekey"))
        try withVault { scratch in
            #expect(try scratch.run(["put", "db", "app"], input: Data("s3cret".utf8)).status == 0)
            let groupDirectory = scratch.vault + "/groups/vault"
            let itemNames = try FileManager.default.contentsOfDirectory(atPath: groupDirectory).filter {
                $0.hasSuffix(".item")
            }
            let items = try itemNames.map { try Data(contentsOf: URL(fileURLWithPath: groupDirectory + "/" + $0)) }
            let master = try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/master.key"))
            let rekey = try scratch.run(["rekey"])
            #expect(rekey.status == 0, "\(rekey.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/master.key")) != master)
            #expect(
                try itemNames.map { try Data(contentsOf: URL(fileURLWithPath: groupDirectory + "/" + $0)) } == items)
            let get = try scratch.run(["get", "db", "app"])
            #expect(get.status == 0 && get.output == Data("s3cret".utf8), "\(get.errors)")
        }
    }

    // MARK: A private group, end to end

    @Test func aPrivateGroupIsCreatedListedUsedAndRemoved() throws {
        try withVault { scratch in
            let create = try scratch.run(["group", "create", "db"])
            #expect(create.status == 0, "\(create.errors)")
            #expect(create.output.isEmpty)
            #expect(create.errors == "vault: created group db, private to the vault's owner\n")
            #expect(try status(scratch.vault + "/groups/db").mode == 0o700)

            let empty = try scratch.run(["group", "ls"])
            #expect(empty.status == 0 && empty.errors.isEmpty)
            #expect(empty.text == "db\tprivate\t-\t0\tyes\tno\nvault\t-\t-\t0\tyes\tdefault\n")

            // Groups work end to end for the owner: put and get through the group.
            let put = try scratch.run(["--group", "db", "put", "postgres", "app"], input: Data("s3cret"))
            #expect(put.status == 0 && put.output.isEmpty && put.errors.isEmpty, "\(put.errors)")
            let got = try scratch.run(["--vault", scratch.vault, "--group", "db", "get", "postgres", "app"])
            #expect(got.status == 0, "\(got.errors)")
            #expect(got.output == Data("s3cret"))
            #expect(try scratch.run(["--group", "db", "ls"]).text.hasPrefix("generic\tpostgres\tapp\tdb\t"))
            #expect(
                try scratch.run(["group", "ls"]).text == "db\tprivate\t-\t1\tyes\tno\nvault\t-\t-\t0\tyes\tdefault\n")

            // A group that holds items stays, with them, unless --force.
            let refused = try scratch.run(["group", "rm", "db"])
            #expect(refused.status == 2)
            #expect(
                refused.errors
                    == "vault: group rm: group db still holds 1 item; remove them first, or give --force to remove "
                    + "the group with them (nothing was changed)\n")
            #expect(try scratch.run(["--group", "db", "get", "postgres", "app"]).output == Data("s3cret"))
            #expect(
                try scratch.run(["group", "ls"]).text == "db\tprivate\t-\t1\tyes\tno\nvault\t-\t-\t0\tyes\tdefault\n")

            let forced = try scratch.run(["group", "rm", "db", "--force"])
            #expect(forced.status == 0, "\(forced.errors)")
            #expect(forced.output.isEmpty)
            #expect(forced.errors == "vault: removed group db (with the 1 item it held)\n")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/groups/db"))
            #expect(try scratch.run(["group", "ls"]).text == "vault\t-\t-\t0\tyes\tdefault\n")
            #expect(try scratch.run(["--group", "db", "get", "postgres", "app"]).status == 1)
        }
    }

    @Test func anEmptyGroupIsRemovedWithoutForceAndAMissingOneIsNotFound() throws {
        try withVault { scratch in
            #expect(try scratch.run(["group", "create", "empty"]).status == 0)
            let removed = try scratch.run(["group", "rm", "empty"])
            #expect(removed.status == 0)
            #expect(removed.errors == "vault: removed group empty (it held no items)\n")
            let missing = try scratch.run(["group", "rm", "empty"])
            #expect(missing.status == 1)
            #expect(missing.errors == "vault: group rm: there is no group empty in the vault at \(scratch.vault)\n")
        }
    }

    @Test func anExistingGroupIsExitThreeAndLeftAlone() throws {
        try withVault { scratch in
            #expect(try scratch.run(["group", "create", "db"]).status == 0)
            try scratch.run(["--group", "db", "put", "x"], input: Data("kept"))
            let again = try scratch.run(["group", "create", "db"])
            #expect(again.status == 3)
            #expect(
                again.errors
                    == "vault: group create: group db already exists in the vault at \(scratch.vault); nothing was "
                    + "changed\n")
            #expect(try scratch.run(["--group", "db", "get", "x"]).output == Data("kept"))
        }
    }

    /// The keys of `group ls --json` are an interface (docs/CLI.md has their table): always all nine,
    /// null where unknown. The client's default group is listed though it has no directory yet.
    @Test func theJSONOfGroupLsHasExactlyTheseKeys() throws {
        try withVault { scratch in
            #expect(try scratch.run(["group", "create", "db"]).status == 0)
            let rows = try listed(scratch)
            try #require(rows.count == 2)
            let keys: Set<String> = [
                "name", "shared", "unixGroup", "unixGroupID", "items", "usable", "present", "entitled", "default",
            ]
            #expect(rows.allSatisfy { Set($0.keys) == keys })
            #expect(rows[0]["name"] as? String == "db")
            #expect(rows[0]["shared"] as? Bool == false)
            #expect(rows[0]["unixGroup"] is NSNull && rows[0]["unixGroupID"] is NSNull)
            #expect(rows[0]["items"] as? Int == 0)
            #expect(rows[0]["usable"] as? Bool == true)
            #expect(rows[0]["present"] as? Bool == true)
            #expect(rows[0]["entitled"] as? Bool == false && rows[0]["default"] as? Bool == false)
            // The CLI's default client, "vault": not made yet; the owner's first put makes it.
            #expect(rows[1]["name"] as? String == "vault")
            #expect(rows[1]["present"] as? Bool == false && rows[1]["shared"] is NSNull)
            #expect(rows[1]["items"] as? Int == 0 && rows[1]["usable"] as? Bool == true)
            #expect(rows[1]["entitled"] as? Bool == true && rows[1]["default"] as? Bool == true)
        }
    }

    // MARK: Shared groups

    @Test(
        .enabled(if: geteuid() == 0, "giving a directory to another group needs root"),
        .enabled(if: existingUnixGroup != nil, "no group nogroup or 65534 in /etc/group"))
    func aGroupSharedWithANumericGidIsGroupOwnedAndListedShared() throws {
        let unix = try #require(existingUnixGroup)
        try withVault { scratch in
            let create = try scratch.run(["group", "create", "db", "--unix-group", String(unix.id)])
            #expect(create.status == 0, "\(create.errors)")
            #expect(create.output.isEmpty)
            #expect(
                create.errors
                    == "vault: created group db, shared with Unix group \(unix.name) (gid \(unix.id)): members use it "
                    + "with --vault \(scratch.vault) --group db\n")
            let directory = try status(scratch.vault + "/groups/db")
            #expect(directory.mode == 0o2770)
            #expect(directory.groupID == unix.id)
            let attributes = try FileManager.default.attributesOfItem(atPath: scratch.vault + "/groups/db")
            #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == unix.id)
            let key = try status(scratch.vault + "/groups/db/group.key")
            #expect(key.mode == 0o640 && key.groupID == unix.id)

            #expect(
                try scratch.run(["group", "ls"]).text
                    == "db\tshared\t\(unix.name)\t0\tyes\tno\nvault\t-\t-\t0\tyes\tdefault\n")
            let rows = try listed(scratch).filter { $0["name"] as? String == "db" }
            #expect(rows.count == 1)
            #expect(rows.first?["shared"] as? Bool == true)
            #expect(rows.first?["unixGroup"] as? String == unix.name)
            #expect(rows.first?["unixGroupID"] as? Int == Int(unix.id))

            // The owner uses it like a private group.
            #expect(try scratch.run(["--group", "db", "put", "pg"], input: Data("shared")).status == 0)
            #expect(try scratch.run(["--group", "db", "get", "pg"]).output == Data("shared"))
        }
    }

    @Test func anUnknownUnixGroupIsAUsageErrorAndMakesNothing() throws {
        try withVault { scratch in
            let name = "vault-no-such-group-\(UUID().uuidString.prefix(8))"
            let result = try scratch.run(["group", "create", "db", "--unix-group", name])
            #expect(result.status == 2)
            #expect(
                result.errors
                    == "vault: --unix-group: no Unix group '\(name)' on this system (`getent group '\(name)'` finds "
                    + "none): make it first, or give a numeric gid\n")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/groups/db"))
            #expect(try status(scratch.vault).mode == 0o700, "the vault directory was opened to others")
            for bad in ["", "-5", "4294967295"] {
                let refused = try scratch.run(["group", "create", "db", "--unix-group", bad])
                #expect(refused.status == 2, "\(bad)")
                #expect(refused.errors.hasPrefix("vault: --unix-group: "), "\(bad): \(refused.errors)")
            }
        }
    }

    /// A member of the Unix group uses the shared group without master.key, and lists it; a user
    /// outside it cannot.
    @Test(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"))
    func aMemberUsesTheSharedGroupWithoutMasterKey() throws {
        try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            let (member, outsider, unix) = (users[0], users[1], groups[0])
            try addMember(member, to: unix)
            try withVault { scratch in
                #expect(try scratch.run(["group", "create", "db", "--unix-group", unix.name]).status == 0)
                #expect(try scratch.run(["--group", "db", "put", "pg", "app"], input: Data("for members")).status == 0)
                try makeTraversable(scratch.root)
                try withExecutableForOtherUsers(vaultExecutable.path) { vault in
                    let get = ["--vault", scratch.vault, "--group", "db", "get", "pg", "app"]
                    let got = try runAs(member, vault, get, environment: [:])
                    let list = ["--vault", scratch.vault, "--group", "db", "group", "ls"]
                    let ls = try runAs(member, vault, list, environment: [:])
                    #expect(got.status == 0, "\(got.errors)")
                    #expect(got.output == Data("for members"))
                    #expect(ls.status == 0, "\(ls.errors)")
                    #expect(
                        String(decoding: ls.output, as: UTF8.self)
                            == "db\tshared\t\(unix.name)\t1\tyes\tdefault\nvault\t-\t-\t0\tno\tyes\n")
                    let denied = try runAs(outsider, vault, get, environment: [:])
                    #expect(denied.status != 0 && denied.output.isEmpty, "\(denied.errors)")
                    // A non-member's listing: the group and its Unix group, no count, no item verified.
                    for alias in [["group", "ls"], ["groups"]] {
                        let outside = try runAs(
                            outsider, vault, ["--vault", scratch.vault, "--group", "db"] + alias, environment: [:])
                        #expect(outside.status == 0, "\(outside.errors)")
                        #expect(
                            String(decoding: outside.output, as: UTF8.self)
                                == "db\tshared\t\(unix.name)\t-\tno\tdefault\nvault\t-\t-\t0\tno\tyes\n")
                        #expect(outside.errors.isEmpty, "\(outside.errors)")
                    }
                }
            }
        }
    }

    /// Root on another user's vault acts as that user, whom the kernel lets give a directory only to
    /// a group it is in: refused before anything is made, with the fix; made once the owner is a member.
    @Test(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"))
    func theOwnerMustBeAMemberOfTheUnixGroup() throws {
        try withThrowawayAccounts(users: 1, groups: 1) { users, groups in
            let (owner, unix) = (users[0], groups[0])
            try withScratch { scratch in
                try #require(chown(scratch.root, owner.uid, owner.gid) == 0)
                let created = try scratch.run(["init"])
                try #require(created.status == 0, "\(created.errors)")
                let refused = try scratch.run(["group", "create", "db", "--unix-group", unix.name])
                #expect(refused.status == 4)
                #expect(
                    refused.errors
                        == "vault: group create: the vault's owner \(owner.name) is not a member of Unix group "
                        + "\(unix.name), and the kernel lets only root and the group's members give a directory to "
                        + "it: add the owner to the group (`usermod -aG \(unix.name) \(owner.name)`; the owner's own "
                        + "shells see it after a new login) and run it again; nothing was changed\n")
                #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/groups/db"))
                #expect(try status(scratch.vault).mode == 0o700)

                try addMember(owner, to: unix)
                let made = try scratch.run(["group", "create", "db", "--unix-group", unix.name])
                #expect(made.status == 0, "\(made.errors)")
                let directory = try status(scratch.vault + "/groups/db")
                #expect(directory.mode == 0o2770 && directory.groupID == unix.gid)
                let attributes = try FileManager.default.attributesOfItem(atPath: scratch.vault + "/groups/db")
                #expect((attributes[.ownerAccountID] as? NSNumber)?.uint32Value == owner.uid)
            }
        }
    }

    // MARK: Usage errors

    @Test func usageErrorsNameTheSubcommandsAndTheFix() throws {
        try withVault { scratch in
            let cases: [([String], String)] = [
                (
                    ["group"],
                    "vault: group: missing subcommand; the subcommands are create, ls, rm, rotate, remove-member, export-key, join, resync, machines, revoke (see 'vault group --help')\n"
                ),
                (
                    ["group", "frob"],
                    "vault: group: unknown subcommand 'frob'; the subcommands are create, ls, rm, rotate, remove-member, export-key, join, resync, machines, revoke (see 'vault group "
                        + "--help')\n"
                ),
                (["group", "--json"], "vault: group: unknown option --json (see 'vault group --help')\n"),
                (
                    ["group", "create"],
                    "vault: group create: missing operand NAME (see 'vault group create --help')\n"
                ),
                (
                    ["group", "create", "a", "b"],
                    "vault: group create: unexpected operand 'b' (see 'vault group create --help')\n"
                ),
                (
                    ["group", "create", "bad/name"],
                    "vault: group create: access group name \"bad/name\" has a character outside [A-Za-z0-9._-] "
                        + "(see 'vault group create --help')\n"
                ),
                (
                    ["group", "create", "db", "--unix-group"],
                    "vault: group create: option --unix-group needs a value (UNIXGROUP) (see 'vault group create "
                        + "--help')\n"
                ),
                (["group", "ls", "db"], "vault: group ls: unexpected operand 'db' (see 'vault group ls --help')\n"),
                (["group", "rm"], "vault: group rm: missing operand NAME (see 'vault group rm --help')\n"),
                (
                    ["group", "rm", "db", "--unix-group", "x"],
                    "vault: group rm: unknown option --unix-group (see 'vault group rm --help')\n"
                ),
                (
                    ["help", "group", "frob"],
                    "vault: unknown subcommand 'frob' of group; the subcommands are create, ls, rm, rotate, remove-member, export-key, join, resync, machines, revoke (see 'vault "
                        + "--help')\n"
                ),
            ]
            for (arguments, message) in cases {
                let result = try scratch.run(arguments)
                #expect(result.status == 2, "\(arguments)")
                #expect(result.errors == message, "\(arguments)")
                #expect(result.output.isEmpty, "\(arguments)")
            }
            #expect(
                try scratch.run(["group", "ls"]).text == "vault\t-\t-\t0\tyes\tdefault\n", "a usage error made a group")
        }
    }

    @Test func rotateSealsTheGroupsItemsAgainAndTheyStillRead() throws {
        try withScratch { scratch in
            try #require(try scratch.run(["init"]).status == 0)
            #expect(try scratch.run(["--group", "db", "put", "pg", "app"], input: Data("one")).status == 0)
            #expect(try scratch.run(["--group", "db", "put", "pg", "ops"], input: Data("two")).status == 0)
            let rotated = try scratch.run(["group", "rotate", "db"])
            #expect(rotated.status == 0, "\(rotated.errors)")
            #expect(rotated.errors == "vault: rotated the key of group db (2 items sealed again)\n")
            #expect(try scratch.run(["--group", "db", "get", "pg", "app"]).output == Data("one"))
            #expect(try scratch.run(["--group", "db", "get", "pg", "ops"]).output == Data("two"))
            let missing = try scratch.run(["group", "rotate", "nope"])
            #expect(missing.status == 1, "\(missing.errors)")
        }
    }
}
