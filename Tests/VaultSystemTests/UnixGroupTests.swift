import Foundation
import Testing
import VaultTestSupport

@testable import VaultSystem

/// `/etc/group` as `UserDatabase` reads it, from fixture text.
@Suite struct UnixGroupTests {
    static let fixture = """
        # a comment, then blank and indented lines
        root:x:0:

          wheel:x:10:alice,bob
        vault-db:x:1500:alice,carol,
        nomembers:x:1501
        +nisgroup:x:1600:alice
        -excluded:x:1601:
        +@netgroup
        +
        short:x
        toomany:x:1502:alice:extra
        :x:1503:alice
        badgid:x:15o4:alice
        signed:x:+1505:alice
        nogid:x::alice
        minusone:x:4294967295:alice
        huge:x:4294967296:alice
        vault-db:x:1599:dave
        """

    @Test func parsesNamesIDsAndMembers() {
        let groups = UserDatabase.groups(parsing: Self.fixture)
        #expect(
            groups == [
                UserDatabase.Group(name: "root", id: 0, members: []),
                UserDatabase.Group(name: "wheel", id: 10, members: ["alice", "bob"]),
                UserDatabase.Group(name: "vault-db", id: 1500, members: ["alice", "carol"]),
                UserDatabase.Group(name: "nomembers", id: 1501, members: []),
                UserDatabase.Group(name: "vault-db", id: 1599, members: ["dave"]),
            ])
    }

    @Test func skipsNISCompatAndCommentsInPasswdToo() {
        let users = UserDatabase.users(
            parsing: """
                root:x:0:0:root:/root:/bin/bash
                # alice:x:1000:1000::/home/alice:/bin/sh
                +bob:x:1001:1001::/home/bob:/bin/sh
                -carol
                +::::::
                dave:x:1002:+1002::/home/dave:/bin/sh
                 erin:x:1003:1003::/home/erin:/bin/sh
                """)
        #expect(
            users == [
                UserDatabase.User(name: "root", id: 0, groupID: 0),
                UserDatabase.User(name: "erin", id: 1003, groupID: 1003),
            ])
    }

    @Test func looksGroupsUpByNameAndIDInAFile() throws {
        try withGroupFile { path in
            #expect(UserDatabase.group(named: "wheel", groupFile: path)?.id == 10)
            // The first line of a name wins, as with glibc.
            #expect(UserDatabase.group(named: "vault-db", groupFile: path)?.id == 1500)
            #expect(UserDatabase.group(id: 1599, groupFile: path)?.members == ["dave"])
            #expect(UserDatabase.group(named: "nisgroup", groupFile: path) == nil)
            #expect(UserDatabase.group(id: 4_294_967_295, groupFile: path) == nil)
            #expect(UserDatabase.group(named: "root", groupFile: path + ".missing") == nil)
        }
    }

    /// Runs `body` with the fixture written to a group file in a fresh temp directory.
    private func withGroupFile(_ body: (String) throws -> Void) throws {
        try withTemporaryDirectory("group") { dir in
            let path = dir.file("group")
            try Data(Self.fixture.utf8).write(to: URL(fileURLWithPath: path))
            try body(path)
        }
    }
}
