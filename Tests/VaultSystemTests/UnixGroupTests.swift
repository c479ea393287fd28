import Foundation
import Testing
import VaultTestSupport

@testable import VaultSystem

/// `/etc/group` as `UserDatabase` reads it, from fixture text, and the `--unix-group` values it resolves.
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

    @Test func resolvesNamesAndGIDs() throws {
        try withGroupFile { path in
            let name = try UserDatabase.resolveGroup("vault-db", groupFile: path)
            #expect(name.id == 1500 && name.name == "vault-db")
            let listed = try UserDatabase.resolveGroup("1501", groupFile: path)
            #expect(listed.id == 1501 && listed.name == "nomembers")
            // A gid that only a directory service knows is taken as given, without a name.
            let unlisted = try UserDatabase.resolveGroup("70000", groupFile: path)
            #expect(unlisted.id == 70000 && unlisted.name == nil)
            let zeros = try UserDatabase.resolveGroup("0010", groupFile: path)
            #expect(zeros.id == 10 && zeros.name == "wheel")
            let largest = try UserDatabase.resolveGroup("4294967294", groupFile: path)
            #expect(largest.id == 4_294_967_294 && largest.name == nil)
        }
    }

    @Test(arguments: [
        ("", "not empty text"),
        ("4294967295", "gid '4294967295' is out of range (0 to 4294967294; 4294967295 is no gid)"),
        ("99999999999", "gid '99999999999' is out of range"),
        ("-1", "gid '-1' is negative"),
        ("vault:db", "'vault:db' is not a Unix group name: names hold no ':' and no line break"),
        ("vault\ndb", "is not a Unix group name"),
        ("+5", "no Unix group '+5'"),
        ("nisgroup", "no Unix group 'nisgroup'"),
    ])
    func refuses(_ text: String, _ expected: String) throws {
        try withGroupFile { path in
            let error = #expect(throws: UnixGroupError.self) { try UserDatabase.resolveGroup(text, groupFile: path) }
            #expect(error?.text == text)
            #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
        }
    }

    @Test func anUnknownNameIsNamedWithWhereItWasLookedFor() throws {
        try withGroupFile { path in
            let error = #expect(throws: UnixGroupError.self) {
                try UserDatabase.resolveGroup("ldap-db", groupFile: path)
            }
            #expect(
                error?.description == "no Unix group 'ldap-db' in \(path): make it first, or give a numeric gid")
        }
        let error = #expect(throws: UnixGroupError.self) {
            try UserDatabase.resolveGroup("vt-no-such-group-\(UInt32.random(in: 0..<UInt32.max))")
        }
        #expect(error?.message.contains("on this system (`getent group 'vt-no-such-group-") == true)
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
