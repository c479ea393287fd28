import Foundation
import Testing
import Vault
import VaultSystem
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Fleet groups shared with a Unix group on one host (`group create --etcd … --unix-group`): real Unix
/// users (CI runs as root and makes throwaway accounts) reach the group through the CLI, which hands
/// it to `vault-fleet`; the kernel keeps it to the Unix group's members; another host shares it
/// through etcd. Host A's vault belongs to a throwaway owner (not root, whose privileges would hide a
/// mode that members cannot use), and every user runs with umask 077.
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct FleetSharedGroupTests {
    /// The copies of `vault` and `vault-fleet` that the throwaway users run.
    struct Binaries {
        let vault: String
        let helper: String
    }

    /// Who does what: the vault's owner and two members (all in the Unix group), and a user outside it.
    struct People {
        let owner: ThrowawayUser
        let member: ThrowawayUser
        let otherMember: ThrowawayUser
        let outsider: ThrowawayUser
        let group: ThrowawayGroup
    }

    /// `vault arguments…` as `user` under umask 077 (60 s at most), the copy of `vault-fleet` as its
    /// helper.
    func run(_ user: ThrowawayUser, _ binaries: Binaries, _ arguments: [String], input: String = "") throws
        -> FleetTestSupport.Outcome
    {
        try FleetTestSupport.run(
            "/usr/bin/setpriv",
            [
                "--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", "/bin/sh", "-c",
                "umask 077; exec \"$0\" \"$@\"", binaries.vault,
            ] + arguments,
            input: input,
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "VAULT_FLEET_HELPER": binaries.helper],
            seconds: 60)
    }

    /// `/bin/sh -c script` as `user` (20 s at most).
    func shell(_ user: ThrowawayUser, _ script: String, _ arguments: [String]) throws -> FleetTestSupport.Outcome {
        try FleetTestSupport.run(
            "/usr/bin/setpriv",
            ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", "/bin/sh", "-c", script, "sh"]
                + arguments,
            environment: ["PATH": "/usr/bin:/bin"], seconds: 20)
    }

    /// Mode (permission bits with set-gid), owner and group of `path`.
    func status(_ path: String) throws -> (mode: Int, owner: UInt32, group: UInt32) {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (
            (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1,
            (attributes[.ownerAccountID] as? NSNumber)?.uint32Value ?? .max,
            (attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value ?? .max
        )
    }

    /// Runs `body` with a cluster, the people, host A's vault (the owner's, in a traversable directory)
    /// with fleet group `db` made by the owner through the CLI and shared with the Unix group, host B's
    /// vault (root's) that joined it privately, and the binaries' copies.
    func withSharedFleetGroup(
        _ body: (_ a: String, _ b: String, _ binaries: Binaries, _ people: People) throws -> Void
    ) throws {
        try withThrowawayAccounts(users: 4, groups: 1) { users, groups in
            let people = People(
                owner: users[3], member: users[0], otherMember: users[2], outsider: users[1], group: groups[0])
            for user in [people.owner, people.member, people.otherMember] { try addMember(user, to: people.group) }
            let vault = FleetTestSupport.binaries.appendingPathComponent("vault").path
            let helper = FleetTestSupport.binaries.appendingPathComponent("vault-fleet").path
            try FleetTestSupport.withCluster("shared") { cluster in
                try withTemporaryDirectory("fleet-shared-a") { home in
                    try withTemporaryVault("fleet-shared-b") { b in
                        try makeTraversable(home.path)
                        try FileManager.default.setAttributes(
                            [.ownerAccountID: NSNumber(value: people.owner.uid), .posixPermissions: 0o755],
                            ofItemAtPath: home.path)
                        let a = home.path + "/vault"
                        _ = try Vault.create(
                            at: b.path, client: try Client(applicationIdentifier: "owner"), fleet: .etcd())
                        let endpoint = cluster.endpoints[0]
                        try withExecutableForOtherUsers(vault) { vaultCopy in
                            try withExecutableForOtherUsers(helper) { helperCopy in
                                let binaries = Binaries(vault: vaultCopy, helper: helperCopy)
                                let initialised = try run(
                                    people.owner, binaries, ["--vault", a, "init"])
                                try #require(initialised.status == 0, "\(initialised)")
                                let made = try run(
                                    people.owner, binaries,
                                    [
                                        "--vault", a, "group", "create", "db", "--etcd", endpoint, "--unix-group",
                                        people.group.name,
                                    ])
                                try #require(made.status == 0, "\(made)")
                                #expect(
                                    made.errors.contains("shared with Unix group \(people.group.name)"),
                                    "\(made.errors)")
                                #expect(made.errors.contains("--vault \(a) --group db"), "\(made.errors)")
                                let keyFile = home.path + "/db.key"
                                let exported = try run(
                                    people.owner, binaries,
                                    ["--vault", a, "--passphrase-fd", "0", "group", "export-key", "db", keyFile],
                                    input: "transport\n")
                                try #require(exported.status == 0, "\(exported)")
                                let joined = try FleetTestSupport.vault(
                                    [
                                        "--vault", b.path, "--passphrase-fd", "0", "group", "join", "db", "--etcd",
                                        endpoint, "--group-key", keyFile,
                                    ], input: "transport\n")
                                try #require(joined.status == 0, "\(joined)")
                                try body(a, b.path, binaries, people)
                            }
                        }
                    }
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func membersWriteAndReadTheFleetGroupAndTheOwnerAndTheOtherHostSeeIt() throws {
        try withSharedFleetGroup { a, b, binaries, people in
            let directory = a + "/groups/db"
            let gid = people.group.gid
            // The group as `group create --unix-group` makes any shared group, plus its settings.
            #expect(try status(directory) == (0o2770, people.owner.uid, gid))
            #expect(try status(directory + "/group.key") == (0o640, people.owner.uid, gid))
            #expect(try status(directory + "/fleet.conf") == (0o640, people.owner.uid, gid))
            #expect(try status(directory + "/.lock") == (0o660, people.owner.uid, gid))

            let put = try run(
                people.member, binaries, ["--vault", a, "--group", "db", "put", "postgres", "app"], input: "s3cret")
            #expect(put.status == 0, "\(put)")
            let get = try run(people.member, binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
            #expect(get.status == 0 && get.output == "s3cret", "\(get)")
            // The member's files: the cache's item and the high-water mark, 0660 in the group's Unix group.
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            let item = try #require(names.first { $0.hasSuffix(".item") })
            #expect(try status(directory + "/" + item) == (0o660, people.member.uid, gid))
            // The mark: made by the owner's create (its first refresh), written over in place by the member.
            let mark = try status(directory + "/fleet.mark")
            #expect(mark.mode == 0o660 && mark.group == gid, "\(mark)")
            #expect([people.owner.uid, people.member.uid].contains(mark.owner), "\(mark)")

            // The other member, the owner and the other host read the member's write.
            for user in [people.otherMember, people.owner] {
                let read = try run(user, binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
                #expect(read.status == 0 && read.output == "s3cret", "uid \(user.uid): \(read)")
            }
            let other = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "postgres", "app"])
            #expect(other.status == 0 && other.output == "s3cret", "\(other)")

            // The other host updates it and adds one, the owner adds another, the other member updates
            // that one (over the first member's mark): each user reads every change.
            let update = try FleetTestSupport.vault(
                ["--vault", b, "--group", "db", "put", "postgres", "app"], input: "rotated")
            #expect(update.status == 0, "\(update)")
            let added = try FleetTestSupport.vault(
                ["--vault", b, "--group", "db", "add", "redis", "cache"], input: "r3dis")
            #expect(added.status == 0, "\(added)")
            let ownerAdd = try run(
                people.owner, binaries, ["--vault", a, "--group", "db", "add", "mq", "broker"], input: "amqp")
            #expect(ownerAdd.status == 0, "\(ownerAdd)")
            let otherUpdate = try run(
                people.otherMember, binaries, ["--vault", a, "--group", "db", "put", "mq", "broker"], input: "amqp2")
            #expect(otherUpdate.status == 0, "\(otherUpdate)")
            let expected = [("postgres", "app", "rotated"), ("redis", "cache", "r3dis"), ("mq", "broker", "amqp2")]
            for user in [people.member, people.otherMember, people.owner] {
                for (service, account, secret) in expected {
                    let read = try run(user, binaries, ["--vault", a, "--group", "db", "get", service, account])
                    #expect(read.status == 0 && read.output == secret, "uid \(user.uid) \(service): \(read)")
                }
            }
            let seen = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "mq", "broker"])
            #expect(seen.status == 0 && seen.output == "amqp2", "\(seen)")
            // A duplicate add by a member is refused as on any group.
            let duplicate = try run(
                people.member, binaries, ["--vault", a, "--group", "db", "add", "redis", "cache"], input: "x")
            #expect(duplicate.status == 3, "\(duplicate)")
            // Every file of the group that members share stayed usable by all of them.
            for name in try FileManager.default.contentsOfDirectory(atPath: directory)
            where name.hasSuffix(".item") || name == "fleet.mark" {
                let file = try status(directory + "/" + name)
                #expect(file.mode == 0o660 && file.group == gid, "\(name): \(file)")
            }

            // A user outside the Unix group is refused, whatever it asks, and learns no secret.
            for arguments in [["get", "postgres", "app"], ["ls"], ["put", "postgres", "app"]] {
                let refused = try run(
                    people.outsider, binaries, ["--vault", a, "--group", "db"] + arguments, input: "y")
                #expect(refused.status == 4, "\(arguments): \(refused)")
                #expect(!refused.output.contains("rotated") && !refused.errors.contains("rotated"))
            }
            let still = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "postgres", "app"])
            #expect(still.output == "rotated", "\(still)")

            // The other host rotates the group's key: a member cannot take it (this machine's key is the
            // owner's), and is told who can; once the owner's process took it, members read on.
            let rotation = try FleetTestSupport.vault(["--vault", b, "group", "rotate", "db"])
            #expect(rotation.status == 0 && rotation.errors.contains("sealed to 2 machines"), "\(rotation)")
            let waiting = try run(people.member, binaries, ["--vault", a, "--group", "db", "get", "mq", "broker"])
            #expect(
                waiting.status == 4 && waiting.errors.contains("vault's owner (uid \(people.owner.uid))"), "\(waiting)")
            let taken = try run(people.owner, binaries, ["--vault", a, "--group", "db", "get", "mq", "broker"])
            #expect(taken.status == 0 && taken.output == "amqp2", "\(taken)")
            for user in [people.member, people.otherMember] {
                let read = try run(user, binaries, ["--vault", a, "--group", "db", "get", "redis", "cache"])
                #expect(read.status == 0 && read.output == "r3dis", "uid \(user.uid): \(read)")
            }
            let keyFile = try status(directory + "/group.key")
            #expect(keyFile.mode == 0o640 && keyFile.group == gid, "\(keyFile)")
            let machineKey = try status(directory + "/fleet.machine")
            #expect(machineKey.mode == 0o600 && machineKey.owner == people.owner.uid, "\(machineKey)")
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func settingsAMemberPutInTheGroupAreRefusedAndNothingIsSentToTheirEndpoint() throws {
        try withSharedFleetGroup { a, _, binaries, people in
            let put = try run(
                people.member, binaries, ["--vault", a, "--group", "db", "put", "postgres", "app"], input: "s3cret")
            try #require(put.status == 0, "\(put)")
            let listener = try LoopbackListener()
            // The positive control: a connection to the listener is counted.
            #expect(try LoopbackListener.connect(port: listener.port))
            #expect(listener.connections() == 1)
            let directory = a + "/groups/db"
            let settings = "endpoint=http://127.0.0.1:\(listener.port)\nuser=root\npassword-file=/etc/shadow\n"
            // The member may replace files in the group's directory (2770, no sticky bit). First a file of
            // the owner's that members may write (the lock, 0660), filled with its settings and renamed;
            // then a file of its own.
            let plants = [
                "printf '%s' \"$2\" > \"$1/.lock\" && mv -f \"$1/.lock\" \"$1/fleet.conf\"",
                "printf '%s' \"$2\" > \"$1/fleet.conf.new\" && mv -f \"$1/fleet.conf.new\" \"$1/fleet.conf\"",
            ]
            for (index, plant) in plants.enumerated() {
                let replaced = try shell(people.member, plant, [directory, settings])
                try #require(replaced.status == 0, "\(replaced)")
                let planted = try status(directory + "/fleet.conf")
                #expect(planted.owner == (index == 0 ? people.owner.uid : people.member.uid))
                for user in [people.owner, people.member, people.otherMember] {
                    let outcome = try run(user, binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
                    #expect(outcome.status == 4, "plant \(index), uid \(user.uid): \(outcome)")
                    #expect(
                        outcome.errors.contains("fleet.conf")
                            && outcome.errors.contains("not the fleet group's settings"),
                        "plant \(index), uid \(user.uid): \(outcome.errors)")
                    #expect(outcome.output.isEmpty)
                }
            }
            // The owner's backup goes on past a group it cannot read: named, left out, the rest written.
            let key = "/tmp/vault-owner-\(people.owner.name).key"
            let backup = "/tmp/vault-owner-\(people.owner.name).backup"
            defer {
                try? FileManager.default.removeItem(atPath: key)
                try? FileManager.default.removeItem(atPath: backup)
            }
            try #require(try shell(people.owner, "umask 077; head -c 32 /dev/urandom > \"$1\"", [key]).status == 0)
            let export = try run(people.owner, binaries, ["--vault", a, "export", "--backup-key-file", key, backup])
            #expect(export.status != 0 && export.errors.contains("left out group db"), "\(export)")
            #expect(FileManager.default.fileExists(atPath: backup), "no backup of the other groups: \(export)")
            #expect(listener.connections() == 0, "a process connected to the planted endpoint")
            // The other way round: the owner's settings name a password file of the member's own (its
            // credentials elsewhere), which the member's process would send to the owner's endpoint.
            let credentials = try shell(
                people.member, "umask 077; printf 'member-only-token\\n' > \"$1\"",
                ["/tmp/vault-member-\(people.member.name).token"])
            try #require(credentials.status == 0, "\(credentials)")
            defer { try? FileManager.default.removeItem(atPath: "/tmp/vault-member-\(people.member.name).token") }
            let ownerSettings =
                "endpoint=http://127.0.0.1:\(listener.port)\nuser=app\n"
                + "password-file=/tmp/vault-member-\(people.member.name).token\n"
            let rewritten = try shell(
                people.owner,
                "umask 027; printf '%s' \"$2\" > \"$1/fleet.conf.new\" && mv -f \"$1/fleet.conf.new\" \"$1/fleet.conf\"",
                [directory, ownerSettings])
            try #require(rewritten.status == 0, "\(rewritten)")
            let sent = try run(people.member, binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
            #expect(sent.status == 4 && sent.errors.contains("not to the vault's owner"), "\(sent)")
            #expect(!sent.errors.contains("member-only-token") && sent.output.isEmpty)
            #expect(listener.connections() == 0, "the member's process connected to the owner's endpoint")
            // Without the settings at all, the group is not taken for a local one.
            try FileManager.default.removeItem(atPath: directory + "/fleet.conf")
            let missing = try run(people.member, binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
            #expect(missing.status == 6 && missing.errors.contains("fleet.conf is missing"), "\(missing)")
            #expect(missing.output.isEmpty)
        }
    }
}

/// A TCP socket listening on 127.0.0.1 (a port the kernel picks) that no one answers: it counts the
/// connections made to it.
final class LoopbackListener {
    let socket: Int32
    let port: Int

    init() throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw FleetTestSupport.ClusterFailure(message: "socket: \(errno)") }
        var address = FleetTestSupport.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw FleetTestSupport.ClusterFailure(message: "cannot listen on 127.0.0.1: \(errno)")
        }
        socket = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(socket) }

    /// Connects to 127.0.0.1:`port` and closes the connection; whether it connected.
    static func connect(port: Int) throws -> Bool {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = FleetTestSupport.loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// How many connections are waiting now (each accepted and closed).
    func connections() -> Int {
        var count = 0
        while case let accepted = accept(socket, nil, nil), accepted >= 0 {
            close(accepted)
            count += 1
        }
        return count
    }
}
