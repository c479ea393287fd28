import Foundation
import Testing
import Vault
import VaultTestSupport

/// Shared groups between real Unix users (CI runs as root and makes throwaway accounts): the kernel,
/// not the library, keeps a group to the members of its Unix group.
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct SharedGroupTests {
    /// `withSharedGroupsVault` with a copy of the `vault` binary: `body` gets the vault's path and the
    /// copy's.
    func withSharedVault(
        _ body: (_ vault: String, _ binary: String, _ users: [ThrowawayUser], _ groups: [ThrowawayGroup]) throws ->
            Void
    ) throws {
        try withSharedGroupsVault(copying: [vaultExecutable.path]) { vault, copies, users, groups in
            try body(vault, copies[0], users, groups)
        }
    }

    func run(
        _ user: ThrowawayUser, _ binary: String, _ vault: String, _ arguments: [String], input: String? = nil,
        environment: [String: String] = [:]
    ) throws -> (status: Int32, output: String, errors: String) {
        let result = try runAs(
            user, binary, ["--vault", vault] + arguments,
            environment: ["HOME": "/nonexistent"].merging(environment) { $1 },
            input: input.map { Data($0.utf8) })
        return (result.status, String(decoding: result.output, as: UTF8.self), result.errors)
    }

    @Test func aMemberWritesAndReadsItsGroupAndTheOwnerSeesTheSameItem() throws {
        try withSharedVault { vault, binary, users, groups in
            let put = try run(users[0], binary, vault, ["--group", "db", "put", "postgres", "app"], input: "s3cret")
            #expect(put.status == 0, "\(put.errors)")
            let get = try run(users[0], binary, vault, ["--group", "db", "get", "postgres", "app"])
            #expect(get.status == 0 && get.output == "s3cret", "\(get.errors)")
            let ls = try run(users[0], binary, vault, ["--group", "db", "ls"])
            #expect(ls.output.contains("postgres"), "\(ls.errors)")
            // The file is the member's, in the group's Unix group, 0660: other members read it.
            let directory = vault + "/groups/db"
            let item = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".item") })
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + item)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o660)
            #expect((attributes[.ownerAccountID] as? NSNumber)?.uint32Value == users[0].uid)
            #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == groups[0].gid)
            // The owner (root here) reads it with the sealed copy of the group key.
            #expect(try ownerReads(vault, group: "db", service: "postgres", account: "app") == Data("s3cret".utf8))
        }
    }

    /// A member names no group and still finds its items: the owner's index of the groups shared with
    /// each Unix group (`groups/.shared.<gid>`, 0640 of that gid) points it at them. A user of another
    /// Unix group, or of none, is pointed at nothing it cannot open; an add among several shared groups
    /// asks which; a removed group leaves the index.
    @Test func aMemberFindsItsSharedGroupsWithoutNamingThem() throws {
        try withSharedVault { vault, binary, users, groups in
            let owner = try Vault.open(
                at: vault, client: try Client(applicationIdentifier: "owner", accessGroups: ["db"]))
            try owner.set("s3cret", for: try ItemKey(service: "postgres", account: "app", group: try AccessGroup("db")))
            let index = vault + "/groups/.shared.\(groups[0].gid)"
            let attributes = try FileManager.default.attributesOfItem(atPath: index)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o640)
            #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == groups[0].gid)
            #expect(try String(contentsOfFile: index, encoding: .utf8) == "db\n")
            // Without --group: the listing, the get and the group listing find db.
            let ls = try run(users[0], binary, vault, ["ls"])
            #expect(ls.status == 0 && ls.output.contains("postgres"), "\(ls.errors)")
            let get = try run(users[0], binary, vault, ["get", "postgres", "app"])
            #expect(get.status == 0 && get.output == "s3cret", "\(get.errors)")
            let named = try run(users[0], binary, vault, ["ls"], environment: ["VAULT_ACCESS_GROUPS": "db,api"])
            #expect(named.status == 0 && named.output.contains("postgres"), "\(named.errors)")
            // The group names, each line's first field (a Unix group's random name may hold "db" too).
            func listed(_ output: String) -> Set<String> {
                Set(output.split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) })
            }
            let groupList = try run(users[0], binary, vault, ["group", "ls"])
            #expect(
                listed(groupList.output).contains("db") && !listed(groupList.output).contains("web"),
                "\(groupList.output)")
            // An add goes to the one shared group.
            let put = try run(users[0], binary, vault, ["put", "api", "token"], input: "t0ken")
            #expect(put.status == 0, "\(put.errors)")
            #expect(try ownerReads(vault, group: "db", service: "api", account: "token") == Data("t0ken".utf8))
            // Another Unix group's member sees its own group only; a user of neither, none, and is told
            // where items can go.
            let other = try run(users[1], binary, vault, ["group", "ls"])
            #expect(listed(other.output).contains("web") && !listed(other.output).contains("db"), "\(other.output)")
            let outsider = try run(users[2], binary, vault, ["put", "x", "y"], input: "x")
            #expect(outsider.status == 1 && outsider.errors.contains("--group NAME"), "\(outsider.errors)")
            #expect(try run(users[2], binary, vault, ["ls"]).output.isEmpty)
            // Two shared groups of one Unix group: an add without --group asks which.
            try owner.createGroup(try AccessGroup("cache"), unixGroup: groups[0].gid)
            #expect(try String(contentsOfFile: index, encoding: .utf8) == "cache\ndb\n")
            let ambiguous = try run(users[0], binary, vault, ["put", "k", "v"], input: "x")
            #expect(ambiguous.status == 2 && ambiguous.errors.contains("cache, db"), "\(ambiguous.errors)")
            // A removed group leaves its index; the last one of a gid takes the index with it.
            try owner.removeGroup(try AccessGroup("cache"), force: true)
            #expect(try String(contentsOfFile: index, encoding: .utf8) == "db\n")
            try owner.removeGroup(try AccessGroup("web"), force: true)
            #expect(!FileManager.default.fileExists(atPath: vault + "/groups/.shared.\(groups[1].gid)"))
        }
    }

    /// A shared group keeps history as a private one does: the versions are sealed like the items,
    /// 0660 in the group's Unix group, each names the uid that wrote it, and a member restores what the
    /// owner overwrote or removed; an outsider reads no version.
    @Test func aSharedGroupKeepsHistoryForItsMembersAndTheOwner() throws {
        try withSharedVault { vault, binary, users, groups in
            let put = try run(users[0], binary, vault, ["--group", "db", "put", "postgres", "app"], input: "first")
            #expect(put.status == 0, "\(put.errors)")
            let owner = try Vault.open(
                at: vault, client: try Client(applicationIdentifier: "owner", accessGroups: ["db"]))
            let key = try ItemKey(service: "postgres", account: "app", group: try AccessGroup("db"))
            try owner.set("second", for: key)
            #expect(try owner.remove(key))
            let history = try owner.history(of: key)
            #expect(history.map(\.number) == [1, 2, 3])
            #expect(history.map(\.writerID) == [users[0].uid, 0, 0])
            #expect(history.last?.isDeletion == true)
            let directory = vault + "/groups/db"
            for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasPrefix(".v.") {
                let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/" + name)
                #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o660, "\(name)")
                #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == groups[0].gid, "\(name)")
            }
            // The member lists the versions and restores the owner's.
            let listed = try run(users[0], binary, vault, ["--group", "db", "history", "postgres", "app"])
            #expect(listed.status == 0 && listed.output.contains("deleted"), "\(listed.errors)")
            let old = try run(users[0], binary, vault, ["--group", "db", "get", "--version", "2", "postgres", "app"])
            #expect(old.status == 0 && old.output == "second", "\(old.errors)")
            let restored = try run(
                users[0], binary, vault, ["--group", "db", "restore", "--version", "2", "postgres", "app"])
            #expect(restored.status == 0, "\(restored.errors)")
            #expect(try owner.string(for: key) == "second")
            // A user outside the group reads no version.
            let outsider = try run(
                users[2], binary, vault, ["--group", "db", "get", "--version", "1", "postgres", "app"])
            #expect(outsider.status != 0 && !outsider.output.contains("first"))
        }
    }

    @Test func aNonMemberIsRefusedWhateverItClaims() throws {
        try withSharedVault { vault, binary, users, groups in
            #expect(
                try run(users[0], binary, vault, ["--group", "db", "put", "postgres", "app"], input: "x").status == 0)
            let claims: [(arguments: [String], environment: [String: String])] = [
                (["--group", "db", "get", "postgres", "app"], [:]),
                (["get", "postgres", "app"], ["VAULT_ACCESS_GROUPS": "db", "VAULT_APP_ID": "db"]),
                (["--group", "db", "ls"], [:]),
                (["--group", "db", "put", "postgres", "app"], [:]),
            ]
            for claim in claims {
                let refused = try run(
                    users[2], binary, vault, claim.arguments, input: "y", environment: claim.environment)
                #expect(refused.status == 4, "\(claim.arguments): \(refused.status) \(refused.errors)")
                #expect(refused.errors.contains("db") && refused.errors.contains(groups[0].name), "\(refused.errors)")
                #expect(refused.errors.contains("usermod -aG \(groups[0].name)"), "\(refused.errors)")
                #expect(!refused.output.contains("postgres"))
            }
            // A forged entitlements file claims the group too.
            let entitlements = "/tmp/vault-forged-\(UUID().uuidString).json"
            try Data(#"{"application-identifier":"x","keychain-access-groups":["db"]}"#.utf8)
                .write(to: URL(fileURLWithPath: entitlements))
            defer { try? FileManager.default.removeItem(atPath: entitlements) }
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: entitlements)
            let forged = try run(
                users[2], binary, vault, ["get", "postgres", "app"], environment: ["VAULT_ENTITLEMENTS": entitlements])
            #expect(forged.status == 4, "\(forged.errors)")
            // The member of the other group is refused the same way: two services' groups stay apart.
            let other = try run(users[1], binary, vault, ["--group", "db", "get", "postgres", "app"])
            #expect(other.status == 4, "\(other.errors)")
            #expect(try run(users[1], binary, vault, ["--group", "web", "put", "cdn", "key"], input: "w").status == 0)
            #expect(try run(users[0], binary, vault, ["--group", "web", "get", "cdn", "key"]).status == 4)
            // Nothing of the vault's other files is open to members: not the master key, not the listing.
            #expect(!FileManager.default.isReadableFile(atPath: vault + "/master.key") || getuid() == 0)
            let listing = try runAs(users[2], "/bin/ls", [vault + "/groups"], environment: [:])
            #expect(listing.status != 0)
        }
    }

    /// `group ls` (and `groups`) verifies the item files of the groups this process holds the key of:
    /// a member is told of a damaged file of its group (exit 6); a non-member learns neither the file nor
    /// a count, and has nothing verified.
    @Test func aMembersListingNamesDamageAndANonMembersShowsNoCount() throws {
        try withSharedVault { vault, binary, users, groups in
            #expect(
                try run(users[0], binary, vault, ["--group", "db", "put", "postgres", "app"], input: "x").status == 0)
            #expect(try run(users[0], binary, vault, ["--group", "db", "put", "redis", "app"], input: "y").status == 0)
            let directory = vault + "/groups/db"
            let item = try #require(
                try FileManager.default.contentsOfDirectory(atPath: directory).sorted().first { $0.hasSuffix(".item") })
            let handle = try #require(FileHandle(forUpdatingAtPath: directory + "/" + item))
            // One bit of the ciphertext flipped (a byte written over could be the byte that was there).
            try handle.seek(toOffset: 40)
            let byte = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: 40)
            try handle.write(contentsOf: Data([byte ^ 0x01]))
            try handle.close()
            for listing in [["group", "ls"], ["groups"]] {
                let member = try run(users[0], binary, vault, ["--group", "db"] + listing)
                #expect(member.status == 6, "\(member.errors)")
                #expect(member.output.hasPrefix("db\tshared\t\(groups[0].name)\t2\tyes\tdefault\n"), "\(member.output)")
                #expect(member.errors.contains(directory + "/" + item), "\(member.errors)")
                let outsider = try run(users[2], binary, vault, ["--group", "db"] + listing)
                #expect(outsider.status == 0, "\(outsider.errors)")
                #expect(
                    outsider.output.hasPrefix("db\tshared\t\(groups[0].name)\t-\tno\tdefault\n"), "\(outsider.output)")
                #expect(!outsider.errors.contains(".item"), "\(outsider.errors)")
                let json = try run(users[2], binary, vault, ["--group", "db"] + listing + ["--json"])
                let rows = try #require(
                    try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
                #expect(rows.first { $0["name"] as? String == "db" }?["items"] is NSNull)
            }
        }
    }

    /// A root-owned vault whose key is in an external key file has no `master.key`: its members are
    /// told apart by who they are (not root, not the owner), not by a `master.key` they cannot open.
    @Test func aKeyFileVaultOfRootHasMembersToo() throws {
        try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            let (member, outsider, unix) = (users[0], users[1], groups[0])
            try addMember(member, to: unix)
            try withScratch { scratch in
                try makeTraversable(scratch.root)
                let key = ["--key-file", scratch.root + "/vault.key"]
                try #require(try scratch.run(key + ["init"]).status == 0)
                try #require(try scratch.run(key + ["group", "create", "db", "--unix-group", unix.name]).status == 0)
                #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
                try withExecutableForOtherUsers(vaultExecutable.path) { binary in
                    let vault = scratch.vault
                    let put = try run(member, binary, vault, ["--group", "db", "put", "pg", "app"], input: "s3cret")
                    #expect(put.status == 0, "\(put.errors)")
                    let get = try run(member, binary, vault, ["--group", "db", "get", "pg", "app"])
                    #expect(get.status == 0 && get.output == "s3cret", "\(get.errors)")
                    let refused = try run(outsider, binary, vault, ["--group", "db", "get", "pg", "app"])
                    #expect(
                        refused.status == 4 && refused.errors.contains("usermod -aG \(unix.name)"), "\(refused.errors)")
                }
                let owned = try scratch.run(key + ["--group", "db", "get", "pg", "app"])
                #expect(owned.output == Data("s3cret".utf8), "\(owned.errors)")
            }
        }
    }

    @Test func twoUsersIncrementingOneSharedItemLoseNothing() throws {
        try withSharedVault { vault, _, users, groups in
            try addMember(users[1], to: groups[0])
            try withExecutableForOtherUsers(helperPath) { helper in
                let perProcess = 500
                var processes: [Process] = []
                for user in [users[0], users[1]] {
                    for _ in 0..<4 {
                        let process = Process()
                        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
                        process.arguments = [
                            "--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", helper, "increment",
                            vault, "db", String(perProcess),
                        ]
                        process.environment = ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"]
                        try process.run()
                        processes.append(process)
                    }
                }
                for process in processes { process.waitUntilExit() }
                #expect(processes.allSatisfy { $0.terminationStatus == 0 })
                let owner = try Vault.open(
                    at: vault, client: try Client(applicationIdentifier: "owner", accessGroups: ["db"]))
                let value = try owner.data(
                    for:
                        try ItemKey(service: "counter", account: "value", group: try AccessGroup("db")))
                #expect(value.map { String(decoding: $0, as: UTF8.self) } == String(8 * perProcess))
            }
        }
    }

    /// The attack behind issue 39's damaged key: a member renames the owner's `.lock` (0660) to
    /// `group.key` and writes into it, a key file of the owner's that does not open. The owner's `check`
    /// names the key once, and `check --remove-damaged` and `rm` keep every item of the group; the
    /// owner's backup holds the other group.
    @Test func aMemberDamagingItsGroupsKeyMakesTheOwnerRemoveNothing() throws {
        try withSharedVault { vault, binary, users, groups in
            for service in ["one", "two"] {
                let put = try run(users[0], binary, vault, ["--group", "db", "put", service], input: "s")
                try #require(put.status == 0, "\(put.errors)")
            }
            let directory = vault + "/groups/db"
            let attack = try runAs(
                users[0], "/bin/sh", ["-c", "cd '\(directory)' && mv .lock group.key && printf garbage >> group.key"],
                environment: [:])
            try #require(attack.status == 0, "\(attack.errors)")
            let scratch = URL(fileURLWithPath: vault).deletingLastPathComponent().path
            func asOwner(_ arguments: [String]) throws -> RunResult {
                try runVault(
                    ["--vault", vault] + arguments, input: Data(),
                    environment: ["HOME": "/nonexistent", "PATH": "/usr/bin:/bin"], scratch: scratch)
            }
            let check = try asOwner(["check"])
            #expect(check.status == 6 && check.errors.contains("group db was not checked"), "\(check.errors)")
            _ = try asOwner(["check", "--remove-damaged"])
            _ = try asOwner(["--group", "db", "rm", "one"])
            let left = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".item") }
            #expect(left.count == 2, "the owner removed items of the group: \(left)")
            // The member's own listing says what is wrong with the group, not only that it is unusable.
            let listed = try run(users[0], binary, vault, ["group", "ls"])
            #expect(listed.status == 6 && listed.errors.contains(directory + "/group.key"), "\(listed.errors)")
        }
    }
}
