import Foundation
import Testing

@testable import VaultSystem
@testable import VaultTestSupport

/// The throwaway users and groups of VaultTestSupport, and running programs as them (root only: CI).
@Suite struct UnixAccountsTests {
    @Test(.enabled(if: canRunAsOtherUsers)) func aMemberRunsWithTheGroupAndOthersDoNot() throws {
        let (users, group) = try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            #expect(users.count == 2 && groups.count == 1)
            #expect(Set(users.map(\.name) + groups.map(\.name)).count == 3)
            for name in users.map(\.name) + groups.map(\.name) {
                #expect(name.hasPrefix("vt-") && name.utf8.count <= 32)
            }
            try addMember(users[0], to: groups[0])
            #expect(UserDatabase.group(id: groups[0].gid)?.members == [users[0].name])

            let member = try runAs(users[0], "/usr/bin/id", ["-G"], environment: [:])
            #expect(member.status == 0, "\(member.errors)")
            let memberGroups = try groupIDs(member.output)
            #expect(memberGroups.contains(groups[0].gid))
            #expect(memberGroups.contains(users[0].gid))

            let other = try runAs(users[1], "/usr/bin/id", ["-G"], environment: [:])
            #expect(other.status == 0, "\(other.errors)")
            #expect(try groupIDs(other.output) == [users[1].gid])
            return (users, groups[0])
        }
        for user in users {
            #expect(try getent("passwd", user.name) == 2)
            // The user's own group went with it.
            #expect(try getent("group", user.name) == 2)
        }
        #expect(try getent("group", group.name) == 2)
    }

    @Test(.enabled(if: canRunAsOtherUsers)) func runAsGivesOnlyTheEnvironmentAndTheInput() throws {
        try withThrowawayAccounts(users: 1, groups: 0) { users, _ in
            let id = try runAs(users[0], "/usr/bin/id", ["-u"], environment: [:])
            #expect(String(decoding: id.output, as: UTF8.self) == "\(users[0].uid)\n")
            let environment = try runAs(users[0], "/usr/bin/env", [], environment: ["VAULT_DIR": "/nowhere"])
            #expect(
                String(decoding: environment.output, as: UTF8.self)
                    == "PATH=/usr/local/bin:/usr/bin:/bin\nVAULT_DIR=/nowhere\n"
                    || String(decoding: environment.output, as: UTF8.self)
                        == "VAULT_DIR=/nowhere\nPATH=/usr/local/bin:/usr/bin:/bin\n"
            )
            let copied = try runAs(users[0], "/bin/cat", [], environment: [:], input: Data("secret\n".utf8))
            #expect(copied.output == Data("secret\n".utf8))
            let failed = try runAs(users[0], "/bin/cat", ["/root/.nonexistent"], environment: [:])
            #expect(failed.status == 1)
            #expect(failed.errors.contains("/root/.nonexistent"))
        }
    }

    @Test(.enabled(if: canManageAccounts)) func accountsAreRemovedWhenTheBodyThrows() throws {
        struct Planned: Error {}
        var names: [String] = []
        #expect(throws: Planned.self) {
            try withThrowawayAccounts(users: 1, groups: 1) { users, groups in
                names = [users[0].name, groups[0].name]
                throw Planned()
            }
        }
        #expect(names.count == 2)
        #expect(try getent("passwd", names[0]) == 2)
        #expect(try getent("group", names[0]) == 2)
        #expect(try getent("group", names[1]) == 2)
    }

    @Test(.enabled(if: canRunAsOtherUsers)) func aCopiedExecutableRunsForAnotherUser() throws {
        try withThrowawayAccounts(users: 1, groups: 0) { users, _ in
            var directory = ""
            try withExecutableForOtherUsers("/usr/bin/id") { copy in
                directory = (copy as NSString).deletingLastPathComponent
                #expect(copy.hasPrefix("/tmp/vault-exec-") && copy.hasSuffix("/id"))
                #expect(try mode(directory) == 0o755)
                #expect(try mode(copy) == 0o755)
                let result = try runAs(users[0], copy, ["-u"], environment: [:])
                #expect(String(decoding: result.output, as: UTF8.self) == "\(users[0].uid)\n", "\(result.errors)")
            }
            #expect(!FileManager.default.fileExists(atPath: directory))
        }
    }

    /// This test bundle, a debug Swift executable of the build, runs as a throwaway user: where it was
    /// built when the directories above it let others in, and as a copy under /tmp in any case.
    @Test(.enabled(if: canRunAsOtherUsers)) func anExecutableOfThisBuildRunsForAnotherUser() throws {
        let bundle = CommandLine.arguments[0]
        try withThrowawayAccounts(users: 1, groups: 0) { users, _ in
            let inPlace = (try? makeTraversable(bundle)) != nil ? [bundle] : []
            try withExecutableForOtherUsers(bundle) { copy in
                for path in inPlace + [copy] {
                    let listed = try runAs(
                        users[0], path, ["--testing-library", "swift-testing", "--list-tests"], environment: [:])
                    #expect(listed.status == 0, "\(path): \(listed.errors)")
                    #expect(
                        String(decoding: listed.output, as: UTF8.self).contains(
                            "UnixAccountsTests/anExecutableOfThisBuildRunsForAnotherUser()"))
                }
            }
        }
    }

    @Test func makeTraversableOpensTheTempTreeAndNamesWhatBlocksOutsideIt() throws {
        try withTemporaryDirectory("traverse") { dir in
            let nested = dir.file("a/b/c")
            try FileManager.default.createDirectory(atPath: nested, withIntermediateDirectories: true)
            for path in [dir.file("a"), dir.file("a/b"), nested] {
                try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
            }
            // Only directories inside the allowed one change: here `a` itself is outside.
            let error = #expect(throws: UnixAccountError.self) {
                try makeTraversable(nested, changingOnlyUnder: dir.file("a"))
            }
            #expect(error?.message.hasPrefix("\(try realPath(dir.file("a"))) is not searchable by other users") == true)
            #expect(try mode(dir.file("a/b")) == 0o700)

            try makeTraversable(nested, changingOnlyUnder: dir.path)
            for path in [dir.file("a"), dir.file("a/b"), nested] { #expect(try mode(path) == 0o701) }
            // A file's directories are checked, not the file.
            try Data("x".utf8).write(to: URL(fileURLWithPath: dir.file("a/b/c/file")))
            try makeTraversable(dir.file("a/b/c/file"))
        }
    }

    private func groupIDs(_ output: Data) throws -> [UInt32] {
        try String(decoding: output, as: UTF8.self).split(whereSeparator: \.isWhitespace).map {
            try #require(UInt32($0))
        }
    }

    /// The exit status of `getent DATABASE KEY`: 2 when the key is not found.
    private func getent(_ database: String, _ key: String) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/getent")
        process.arguments = [database, key]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    private func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }
}
