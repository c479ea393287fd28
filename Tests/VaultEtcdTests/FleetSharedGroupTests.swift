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
/// through etcd.
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct FleetSharedGroupTests {
    /// The copies of `vault` and `vault-fleet` that the throwaway users run.
    struct Binaries {
        let vault: String
        let helper: String
    }

    /// `vault arguments…` as `user` (60 s at most), the copy of `vault-fleet` as its helper.
    func member(_ user: ThrowawayUser, _ binaries: Binaries, _ arguments: [String], input: String = "") throws
        -> FleetTestSupport.Outcome
    {
        try FleetTestSupport.run(
            "/usr/bin/setpriv",
            ["--reuid=\(user.uid)", "--regid=\(user.gid)", "--init-groups", "--", binaries.vault] + arguments,
            input: input,
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "VAULT_FLEET_HELPER": binaries.helper],
            seconds: 60)
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

    /// Runs `body` with a cluster, throwaway accounts (`users[0]` in `groups[0]`, `users[1]` not), host
    /// A's vault (root's, in a traversable directory) with fleet group `db` made by the CLI and shared
    /// with `groups[0]`, host B's vault (root's) that joined it privately, and the binaries' copies.
    func withSharedFleetGroup(
        _ body: (
            _ a: String, _ b: String, _ binaries: Binaries, _ users: [ThrowawayUser], _ groups: [ThrowawayGroup],
            _ endpoint: String
        ) throws -> Void
    ) throws {
        try withThrowawayAccounts(users: 2, groups: 1) { users, groups in
            try addMember(users[0], to: groups[0])
            try FleetTestSupport.withCluster("shared") { cluster in
                try withTemporaryVault("fleet-shared-a") { a in
                    try withTemporaryVault("fleet-shared-b") { b in
                        try makeTraversable(a.root)
                        _ = try Vault.create(at: a.path, client: try Client(applicationIdentifier: "owner"), format: 2)
                        _ = try Vault.create(at: b.path, client: try Client(applicationIdentifier: "owner"), format: 2)
                        let endpoint = cluster.endpoints[0]
                        let made = try FleetTestSupport.vault(
                            [
                                "--vault", a.path, "group", "create", "db", "--etcd", endpoint, "--unix-group",
                                groups[0].name,
                            ])
                        try #require(made.status == 0, "\(made)")
                        #expect(made.errors.contains("shared with Unix group \(groups[0].name)"), "\(made.errors)")
                        #expect(made.errors.contains("--vault \(a.path) --group db"), "\(made.errors)")
                        let keyFile = b.root + "/db.key"
                        let exported = try FleetTestSupport.vault(
                            ["--vault", a.path, "group", "export-key", "db", keyFile])
                        try #require(exported.status == 0, "\(exported)")
                        let joined = try FleetTestSupport.vault(
                            ["--vault", b.path, "group", "join", "db", "--etcd", endpoint, "--group-key", keyFile])
                        try #require(joined.status == 0, "\(joined)")
                        let vault = FleetTestSupport.binaries.appendingPathComponent("vault").path
                        let helper = FleetTestSupport.binaries.appendingPathComponent("vault-fleet").path
                        try withExecutableForOtherUsers(vault) { vaultCopy in
                            try withExecutableForOtherUsers(helper) { helperCopy in
                                try body(
                                    a.path, b.path, Binaries(vault: vaultCopy, helper: helperCopy), users, groups,
                                    endpoint)
                            }
                        }
                    }
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func aMemberWritesAndReadsTheFleetGroupAndTheOwnerAndTheOtherHostSeeIt() throws {
        try withSharedFleetGroup { a, b, binaries, users, groups, _ in
            let directory = a + "/groups/db"
            // The group as `group create --unix-group` makes any shared group, plus its settings.
            #expect(try status(directory) == (0o2770, 0, groups[0].gid))
            #expect(try status(directory + "/group.key").mode == 0o640)
            #expect(try status(directory + "/fleet.conf") == (0o640, 0, groups[0].gid))
            #expect(try status(directory + "/.lock").mode == 0o660)

            let put = try member(
                users[0], binaries, ["--vault", a, "--group", "db", "put", "postgres", "app"], input: "s3cret")
            #expect(put.status == 0, "\(put)")
            let get = try member(users[0], binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"])
            #expect(get.status == 0 && get.output == "s3cret", "\(get)")
            // The member's files: the cache's item and the high-water mark, 0660 in the group's Unix group.
            let names = try FileManager.default.contentsOfDirectory(atPath: directory)
            let item = try #require(names.first { $0.hasSuffix(".item") })
            #expect(try status(directory + "/" + item) == (0o660, users[0].uid, groups[0].gid))
            #expect(try status(directory + "/fleet.mark").mode == 0o660)

            // The owner on this host and the other host read the member's write.
            let owner = try FleetTestSupport.vault(["--vault", a, "--group", "db", "get", "postgres", "app"])
            #expect(owner.status == 0 && owner.output == "s3cret", "\(owner)")
            let other = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "postgres", "app"])
            #expect(other.status == 0 && other.output == "s3cret", "\(other)")

            // The other host updates it and adds one; the owner updates another: the member reads all of
            // them (the cache's new files are then the member's or the owner's, and both go on working).
            let update = try FleetTestSupport.vault(
                ["--vault", b, "--group", "db", "put", "postgres", "app"], input: "rotated")
            #expect(update.status == 0, "\(update)")
            let added = try FleetTestSupport.vault(
                ["--vault", b, "--group", "db", "add", "redis", "cache"], input: "r3dis")
            #expect(added.status == 0, "\(added)")
            let ownerAdd = try FleetTestSupport.vault(
                ["--vault", a, "--group", "db", "add", "mq", "broker"], input: "amqp")
            #expect(ownerAdd.status == 0, "\(ownerAdd)")
            for (service, account, secret) in [
                ("postgres", "app", "rotated"), ("redis", "cache", "r3dis"),
                ("mq", "broker", "amqp"),
            ] {
                let read = try member(users[0], binaries, ["--vault", a, "--group", "db", "get", service, account])
                #expect(read.status == 0 && read.output == secret, "\(service): \(read)")
            }
            let memberUpdate = try member(
                users[0], binaries, ["--vault", a, "--group", "db", "put", "mq", "broker"], input: "amqp2")
            #expect(memberUpdate.status == 0, "\(memberUpdate)")
            let seen = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "mq", "broker"])
            #expect(seen.status == 0 && seen.output == "amqp2", "\(seen)")
            // A duplicate add by the member is refused as on any group.
            let duplicate = try member(
                users[0], binaries, ["--vault", a, "--group", "db", "add", "redis", "cache"], input: "x")
            #expect(duplicate.status == 3, "\(duplicate)")

            // A user outside the Unix group is refused, whatever it asks, and learns no secret.
            for arguments in [["get", "postgres", "app"], ["ls"], ["put", "postgres", "app"]] {
                let refused = try member(users[1], binaries, ["--vault", a, "--group", "db"] + arguments, input: "y")
                #expect(refused.status == 4, "\(arguments): \(refused)")
                #expect(!refused.output.contains("rotated") && !refused.errors.contains("rotated"))
            }
            let still = try FleetTestSupport.vault(["--vault", b, "--group", "db", "get", "postgres", "app"])
            #expect(still.output == "rotated", "\(still)")
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func settingsAMemberPutInTheGroupAreRefusedAndNothingIsSentToTheirEndpoint() throws {
        try withSharedFleetGroup { a, _, binaries, users, _, _ in
            let put = try member(
                users[0], binaries, ["--vault", a, "--group", "db", "put", "postgres", "app"], input: "s3cret")
            try #require(put.status == 0, "\(put)")
            // The member may replace files in the group's directory (2770, no sticky bit): a fleet.conf of
            // its own naming its endpoint and, as the password, a file that only root can read.
            let listener = try LoopbackListener()
            let directory = a + "/groups/db"
            let script =
                "printf 'endpoint=http://127.0.0.1:\(listener.port)\\nuser=root\\npassword-file=/etc/shadow\\n' "
                + "> \(directory)/fleet.conf.new && mv -f \(directory)/fleet.conf.new \(directory)/fleet.conf"
            let replaced = try FleetTestSupport.run(
                "/usr/bin/setpriv",
                ["--reuid=\(users[0].uid)", "--regid=\(users[0].gid)", "--init-groups", "--", "/bin/sh", "-c", script],
                environment: ["PATH": "/usr/bin:/bin"], seconds: 20)
            try #require(replaced.status == 0, "\(replaced)")
            #expect(try status(directory + "/fleet.conf").owner == users[0].uid)
            for outcome in [
                try FleetTestSupport.vault(["--vault", a, "--group", "db", "get", "postgres", "app"]),
                try member(users[0], binaries, ["--vault", a, "--group", "db", "get", "postgres", "app"]),
            ] {
                #expect(outcome.status == 4, "\(outcome)")
                #expect(
                    outcome.errors.contains("fleet.conf") && outcome.errors.contains("not the fleet group's settings"),
                    "\(outcome.errors)")
                #expect(outcome.output.isEmpty)
            }
            #expect(listener.connections() == 0, "a process connected to the planted endpoint")
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
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
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
