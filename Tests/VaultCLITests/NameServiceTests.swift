import Foundation
import Testing
import VaultSystem
import VaultTestSupport

/// Users and groups that only a name service other than files knows: Debian's libnss-extrausers, which
/// reads `/var/lib/extrausers/passwd` and `group`, added to `/etc/nsswitch.conf` for the test and
/// restored after it. Such a service user owns a vault, a group of it is shared with such a Unix group,
/// a member reads through it, and root acts as the owner.
@Suite(.serialized) struct NameServiceTests {
    /// An account written to the extrausers files.
    struct Account {
        let name: String
        let id: UInt32
    }

    static let module = ["/usr/lib/libnss_extrausers.so.2", "/usr/lib/x86_64-linux-gnu/libnss_extrausers.so.2"]

    @Test(.enabled(if: canRunAsOtherUsers))
    func aServiceUserAndGroupOnlyExtrausersKnowsOwnAVaultAndShareAGroup() throws {
        try #require(
            Self.module.contains { FileManager.default.fileExists(atPath: $0) },
            "libnss-extrausers is not installed (the README's install line has it)")
        try withExtraUsers { owner, member, shared in
            // Not in /etc/passwd or /etc/group: found through NSS.
            let passwd = try String(contentsOfFile: "/etc/passwd", encoding: .utf8)
            #expect(!passwd.contains(owner.name))
            #expect(UserDatabase.user(named: owner.name)?.id == owner.id)
            #expect(UserDatabase.user(id: owner.id)?.name == owner.name)
            #expect(UserDatabase.group(named: shared.name)?.id == shared.id)
            #expect(UserDatabase.group(id: shared.id)?.members == [member.name, owner.name])
            let memberUser = try #require(UserDatabase.user(named: member.name))
            #expect(UserDatabase.groupIDs(of: memberUser).contains(shared.id))
            #expect(try UserDatabase.resolveGroup(shared.name).id == shared.id)

            try withTemporaryVault("nss") { temporary in
                try makeTraversable(temporary.root)
                let home = temporary.root + "/home"
                try FileManager.default.createDirectory(
                    atPath: home, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o711])
                #expect(chown(home, owner.id, owner.id) == 0)
                let vault = home + "/vault"
                try withExecutableForOtherUsers(vaultExecutable.path) { copy in
                    func vaultCommand(_ arguments: [String], input: String = "") throws -> RunResult {
                        try runVault(
                            ["--vault", vault] + arguments, input: Data(input.utf8),
                            environment: ["PATH": "/usr/bin:/bin"],
                            scratch: temporary.root, executable: URL(fileURLWithPath: copy))
                    }
                    // Root acts as the owner, whom only extrausers knows.
                    let initialized = try vaultCommand(["init"])
                    #expect(initialized.status == 0, "\(initialized.errors)")
                    let status = try FileManager.default.attributesOfItem(atPath: vault)
                    #expect((status[.ownerAccountID] as? NSNumber)?.uint32Value == owner.id)
                    #expect(try vaultCommand(["put", "db", "app"], input: "pw").status == 0)
                    #expect(try vaultCommand(["get", "db", "app"]).text == "pw")
                    // A group shared with a Unix group that only extrausers knows, named by its name.
                    let created = try vaultCommand(["group", "create", "shared", "--unix-group", shared.name])
                    #expect(created.status == 0, "\(created.errors)")
                    #expect(
                        (created.text + created.errors).contains("\(shared.name) (gid \(shared.id))"),
                        "\(created.errors)")
                    #expect(try vaultCommand(["--group", "shared", "put", "api"], input: "tok").status == 0)
                    let listed = try vaultCommand(["group", "ls"])
                    #expect(listed.text.contains(shared.name), "\(listed.text)")
                    // The member, whose membership only extrausers records, reads it.
                    let read = try runSetpriv(
                        [
                            "--reuid=\(member.id)", "--regid=\(member.id)", "--init-groups", "--", copy, "--vault",
                            vault,
                            "--group", "shared", "get", "api",
                        ])
                    #expect(read.status == 0, "\(read.errors)")
                    #expect(read.output == "tok")
                }
            }
        }
    }

    /// Runs `body` with a service user, a member user and a group of which the member is a member, all
    /// only in the extrausers files, with `extrausers` added to the passwd and group lines of
    /// `/etc/nsswitch.conf`; every file is put back as it was however `body` ends.
    func withExtraUsers(_ body: (Account, Account, Account) throws -> Void) throws {
        let directory = "/var/lib/extrausers"
        let files = ["/etc/nsswitch.conf", directory + "/passwd", directory + "/group"]
        let saved = files.map { FileManager.default.contents(atPath: $0) }
        let madeDirectory = !FileManager.default.fileExists(atPath: directory)
        defer {
            for (path, contents) in zip(files, saved) {
                if let contents {
                    FileManager.default.createFile(atPath: path, contents: contents)
                } else {
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
            if madeDirectory { try? FileManager.default.removeItem(atPath: directory) }
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let tag = String(UInt64.random(in: 0..<(1 << 40)), radix: 16)
        let base = try freeIDs()
        let owner = Account(name: "vx-svc-" + tag, id: base)
        let member = Account(name: "vx-mem-" + tag, id: base + 1)
        let shared = Account(name: "vx-shr-" + tag, id: base + 2)
        let passwd =
            (String(data: saved[1] ?? Data(), encoding: .utf8) ?? "")
            + "\(owner.name):x:\(owner.id):\(owner.id)::/nonexistent:/usr/sbin/nologin\n"
            + "\(member.name):x:\(member.id):\(member.id)::/nonexistent:/usr/sbin/nologin\n"
        let group =
            (String(data: saved[2] ?? Data(), encoding: .utf8) ?? "")
            + "\(owner.name):x:\(owner.id):\n\(member.name):x:\(member.id):\n\(shared.name):x:\(shared.id):\(member.name),\(owner.name)\n"
        try passwd.write(toFile: files[1], atomically: true, encoding: .utf8)
        try group.write(toFile: files[2], atomically: true, encoding: .utf8)
        let nsswitch = String(data: saved[0] ?? Data(), encoding: .utf8) ?? ""
        let added = nsswitch.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            let database = line.split(separator: ":").first.map(String.init) ?? ""
            guard database == "passwd" || database == "group", !line.contains("extrausers") else { return String(line) }
            return line + " extrausers"
        }.joined(separator: "\n")
        try added.write(toFile: files[0], atomically: true, encoding: .utf8)
        try body(owner, member, shared)
    }

    /// Three consecutive ids that are neither a user's nor a group's here.
    func freeIDs() throws -> UInt32 {
        for _ in 0..<50 {
            let base = UInt32.random(in: 61_000..<64_000)
            let free = (base..<base + 3).allSatisfy {
                UserDatabase.user(id: $0) == nil && UserDatabase.group(id: $0) == nil
            }
            if free { return base }
        }
        struct NoFreeIDs: Error {}
        throw NoFreeIDs()
    }

    /// Runs setpriv with `arguments`; standard output as text.
    func runSetpriv(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        process.arguments = arguments
        process.environment = ["PATH": "/usr/bin:/bin"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}
