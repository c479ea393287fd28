import Foundation
import Testing
import VaultSystem
import VaultTestSupport

/// `vault group remove-member`, tried with the attack it exists for: a member who, while in the Unix
/// group, made setgid copies of `cat` and `touch` in a directory of its own, then was removed.
@Suite struct RemoveMemberTests {
    @Test(.enabled(if: canRunAsOtherUsers))
    func aRemovedMembersSetgidCopiesReadAndWriteNothingAfterward() throws {
        try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            let (removed, staying, unixGroup) = (users[0], users[1], groups[0])
            try addMember(removed, to: unixGroup)
            try addMember(staying, to: unixGroup)
            try withTemporaryVault("remove-member") { temporary in
                try makeTraversable(temporary.root)
                let vault = temporary.path
                try withExecutableForOtherUsers(vaultExecutable.path) { copy in
                    func asRoot(_ arguments: [String], input: String = "") throws -> RunResult {
                        try runVault(
                            ["--vault", vault] + arguments, input: Data(input.utf8),
                            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], scratch: temporary.root,
                            executable: URL(fileURLWithPath: copy))
                    }
                    #expect(try asRoot(["init"]).status == 0)
                    let created = try asRoot(["group", "create", "db", "--unix-group", unixGroup.name])
                    #expect(created.status == 0, "\(created.errors)")
                    #expect(try asRoot(["--group", "db", "put", "svc"], input: "old").status == 0)

                    // While a member: setgid copies of cat and touch, made as the member.
                    let tools = temporary.root + "/member-tools"
                    try FileManager.default.createDirectory(
                        atPath: tools, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
                    #expect(chown(tools, removed.uid, removed.gid) == 0)
                    let made = try runAs(
                        removed, "/bin/sh",
                        [
                            "-c",
                            "cp /bin/cat /usr/bin/touch \(tools)/ && chgrp \(unixGroup.name) \(tools)/cat \(tools)/touch "
                                + "&& chmod g+s \(tools)/cat \(tools)/touch",
                        ], environment: [:])
                    #expect(made.status == 0, "\(made.errors)")
                    let keyFile = vault + "/groups/db/group.key"
                    #expect(try runAs(removed, tools + "/cat", [keyFile], environment: [:]).status == 0)

                    let removal = try asRoot(["group", "remove-member", "db", removed.name])
                    #expect(removal.status == 0, "\(removal.errors)")
                    #expect(removal.errors.contains("its key rotated"), "\(removal.errors)")
                    let newGroupID = try #require(UserDatabase.group(named: unixGroup.name)?.id)
                    #expect(newGroupID != unixGroup.gid)
                    #expect(UserDatabase.group(named: unixGroup.name)?.members.contains(removed.name) == false)
                    #expect(try asRoot(["--group", "db", "put", "svc"], input: "new").status == 0)

                    // The copies carry the old gid: they read nothing and write nothing.
                    let directory = vault + "/groups/db"
                    let items = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
                        $0.hasSuffix(".item")
                    }
                    try #require(!items.isEmpty)
                    for file in [keyFile, directory + "/" + items[0]] {
                        let read = try runAs(removed, tools + "/cat", [file], environment: [:])
                        #expect(read.status != 0, "\(file) was read")
                        #expect(read.output.isEmpty)
                    }
                    let planted = directory + "/planted"
                    #expect(try runAs(removed, tools + "/touch", [planted], environment: [:]).status != 0)
                    #expect(!FileManager.default.fileExists(atPath: planted))
                    let attributes = try FileManager.default.attributesOfItem(atPath: directory)
                    #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == newGroupID)
                    #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o2770)

                    // The member who stays reads the new secret from a new process.
                    let stays = try runAs(
                        staying, copy, ["--vault", vault, "--group", "db", "get", "svc"], environment: [:])
                    #expect(stays.status == 0, "\(stays.errors)")
                    #expect(String(decoding: stays.output, as: UTF8.self) == "new")
                    // The removed member's own vault binary is refused too.
                    let refused = try runAs(
                        removed, copy, ["--vault", vault, "--group", "db", "get", "svc"], environment: [:])
                    #expect(refused.status == 4, "\(refused.errors)")
                }
            }
        }
    }

    @Test func usageErrorsNameTheOption() throws {
        try withScratch(initialized: true) { scratch in
            let both = try scratch.run(["group", "remove-member", "--new-gid", "5000", "--moved-to", "5001", "db", "u"])
            #expect(both.status == 2)
            #expect(both.errors.contains("not both"))
            #expect(
                try scratch.run(["group", "remove-member", "--new-gid", "x", "db", "u"]).errors.contains("--new-gid"))
            #expect(try scratch.run(["group", "remove-member", "db"]).errors.contains("missing operand USER"))
            #expect(try scratch.run(["group", "create", "db"]).status == 0)
            let private_ = try scratch.run(["group", "remove-member", "db", "u"])
            #expect(private_.status == 2)
            #expect(private_.errors.contains("private"), "\(private_.errors)")
        }
    }
}
