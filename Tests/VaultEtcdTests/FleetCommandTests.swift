import Foundation
import Testing
import VaultTestSupport

/// Fleet groups through the `vault` CLI: the executable (without an etcd client) hands the fleet
/// commands to `vault-fleet` beside it. Two vault directories stand for two hosts.
@Suite(.serialized) struct FleetCommandTests {
    static let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()

    /// `vault arguments…` with `input` on standard input (killed after 60 s).
    func vault(_ arguments: [String], input: String = "", environment: [String: String] = [:]) throws
        -> FleetTestSupport.Outcome
    {
        try FleetTestSupport.run(
            Self.binaries.appendingPathComponent("vault").path, arguments, input: input,
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/nonexistent"].merging(environment) { $1 }, seconds: 60)
    }

    @Test func aFleetGroupIsMadeExportedJoinedAndUsedFromTheCLI() throws {
        let endpoints = try TestCluster.require().joined(separator: ",")
        try withTemporaryVault("fleet-cli") { t in
            let a = t.root + "/a"
            let b = t.root + "/b"
            let keyFile = t.root + "/fleet.key"
            for path in [a, b] { #expect(try vault(["--vault", path, "init"]).status == 0) }
            let create = try vault(["--vault", a, "group", "create", "fleet", "--etcd", endpoints])
            #expect(create.status == 0, "\(create.errors)")
            #expect(create.errors.contains("created fleet group fleet"))
            // The key file is sealed under a transport key (or a passphrase, below), never in the clear.
            let transport = t.root + "/transport.key"
            try #require(
                FileManager.default.createFile(
                    atPath: transport, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                    attributes: [.posixPermissions: 0o600]))
            let export = try vault(
                ["--vault", a, "group", "export-key", "fleet", keyFile, "--backup-key-file", transport])
            #expect(export.status == 0 && export.errors.contains("sealed under \(transport)"), "\(export.errors)")
            let mode = (try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? NSNumber)?
                .intValue
            #expect(mode == 0o600)
            #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)).prefix(4) == Data("VFKX".utf8))
            #expect(
                try vault(["--vault", a, "group", "export-key", "fleet", keyFile, "--backup-key-file", transport])
                    .status == 3, "never over a file")
            let withoutKey = try vault([
                "--vault", b, "group", "join", "fleet", "--etcd", endpoints, "--group-key", keyFile,
            ])
            #expect(withoutKey.status == 2 && withoutKey.errors.contains("--backup-key-file"), "\(withoutKey)")
            let join = try vault(
                [
                    "--vault", b, "group", "join", "fleet", "--etcd", endpoints, "--group-key", keyFile,
                    "--backup-key-file", transport,
                ])
            #expect(join.status == 0, "\(join.errors)")
            // Under a passphrase: a wrong one opens nothing, and without a terminal or --passphrase-fd the
            // join says how to give one.
            let sealedKey = t.root + "/fleet.passphrase.key"
            let sealedExport = try vault(
                ["--vault", a, "--passphrase-fd", "0", "group", "export-key", "fleet", sealedKey], input: "pass one\n")
            #expect(sealedExport.status == 0, "\(sealedExport)")
            let c = t.root + "/c"
            #expect(try vault(["--vault", c, "init"]).status == 0)
            let wrong = try vault(
                [
                    "--vault", c, "--passphrase-fd", "0", "group", "join", "fleet", "--etcd", endpoints, "--group-key",
                    sealedKey,
                ],
                input: "pass two\n")
            #expect(wrong.status == 4 && !wrong.errors.contains("pass two"), "\(wrong)")
            let noTerminal = try vault([
                "--vault", c, "group", "join", "fleet", "--etcd", endpoints, "--group-key", sealedKey,
            ])
            #expect(noTerminal.status == 5 && noTerminal.errors.contains("--passphrase-fd"), "\(noTerminal)")
            let right = try vault(
                [
                    "--vault", c, "--passphrase-fd", "0", "group", "join", "fleet", "--etcd", endpoints, "--group-key",
                    sealedKey,
                ],
                input: "pass one\n")
            #expect(right.status == 0, "\(right)")
            #expect(
                try vault(["--vault", a, "--group", "fleet", "put", "db", "app"], input: "fleet secret").status == 0)
            let get = try vault(["--vault", b, "--group", "fleet", "get", "db", "app"])
            #expect(get.status == 0 && get.output == "fleet secret", "\(get.errors)")
            let listed = try vault(["--vault", b, "--group", "fleet", "ls"])
            #expect(listed.status == 0 && listed.output.contains("db"), "\(listed.errors)")
            #expect(try vault(["--vault", b, "--group", "fleet", "rm", "db", "app"]).status == 0)
            #expect(try vault(["--vault", a, "--group", "fleet", "get", "db", "app"]).status == 1)
            // A join with a key another group exported, or with no key, is refused.
            #expect(try vault(["--vault", b, "group", "join", "other", "--etcd", endpoints]).status == 2)
            // Without vault-fleet, a fleet command says what is missing: exit 9.
            let missing = try vault(
                ["--vault", b, "--group", "fleet", "get", "db", "app"],
                environment: ["VAULT_FLEET_HELPER": t.root + "/no-such-vault-fleet"])
            #expect(missing.status == 9 && missing.errors.contains("no-such-vault-fleet"), "\(missing.errors)")
            // etcd out of reach: a put is exit 9 and changes nothing; a get answers from the cache.
            #expect(try vault(["--vault", a, "--group", "fleet", "put", "db", "app"], input: "kept").status == 0)
            #expect(try vault(["--vault", b, "--group", "fleet", "get", "db", "app"]).output == "kept")
            // The history is etcd's, the same on both hosts: a's first put, b's removal, a's second put.
            let history = try vault(["--vault", b, "--group", "fleet", "history", "db", "app"])
            #expect(history.status == 0 && history.output.split(separator: "\n").count >= 3, "\(history)")
            #expect(!history.output.contains("fleet secret") && !history.output.contains("kept"))
            let first = try vault(["--vault", b, "--group", "fleet", "get", "--version", "1", "db", "app"])
            #expect(first.status == 0 && first.output == "fleet secret", "\(first.errors)")
            let stale = try vault(
                ["--vault", b, "--group", "fleet", "put", "--if-version", "2", "db", "app"], input: "late")
            #expect(stale.status == 3 && stale.errors.contains("version 3 is current"), "\(stale.errors)")
            // `vault run` and `vault inject` naming the fleet group in a secret go through vault-fleet too.
            let run = try vault([
                "--vault", b, "run", "--secret", "s=@fleet/db/app", "--", "sh", "-c",
                "cat \"$CREDENTIALS_DIRECTORY/s\"",
            ])
            #expect(run.status == 0 && run.output == "kept", "\(run.errors)")
            let template = t.root + "/fleet.tmpl"
            try "pw={{ @fleet/db/app }}".write(toFile: template, atomically: true, encoding: .utf8)
            try FileManager.default.createSymbolicLink(atPath: template + ".link", withDestinationPath: template)
            let injected = try vault(["--vault", b, "inject", template + ".link"])
            #expect(injected.status == 0 && injected.output == "pw=kept", "\(injected.errors)")
            try "endpoint=http://127.0.0.1:9\n".write(
                toFile: b + "/groups/fleet/fleet.conf", atomically: true, encoding: .utf8)
            let down = try vault(["--vault", b, "--group", "fleet", "put", "db", "app"], input: "lost?")
            #expect(down.status == 9, "\(down.errors)")
            let cached = try vault(["--vault", b, "--group", "fleet", "get", "db", "app"])
            #expect(cached.status == 0 && cached.output == "kept", "\(cached.errors)")
            #expect(
                cached.errors.contains("etcd is out of reach: answered from this machine's cache of fleet group fleet")
                    && cached.errors.contains("as it was at 20"), "says so, and as of when: \(cached.errors)")
            let fresh = try vault(["--vault", b, "--group", "fleet", "get", "--fresh", "db", "app"])
            #expect(fresh.status == 9 && fresh.output.isEmpty, "--fresh never answers from the cache: \(fresh)")
            #expect(fresh.errors.contains("fresh reads only"), "\(fresh.errors)")
            #expect(try vault(["--vault", a, "--group", "fleet", "get", "db", "app"]).output == "kept")
            #expect(try vault(["--vault", a, "--group", "fleet", "get", "--fresh", "db", "app"]).status == 0)
            // A resync reads the group anew; --accept-rollback is what an operator types after a restore.
            let resync = try vault(["--vault", a, "group", "resync", "fleet"])
            #expect(resync.status == 0 && resync.errors.contains("resynchronised fleet group fleet"), "\(resync)")
            let accepted = try vault(["--vault", a, "group", "resync", "fleet", "--accept-rollback"])
            #expect(accepted.status == 0 && accepted.errors.contains("rollback accepted"), "\(accepted)")
            #expect(try vault(["--vault", a, "--group", "fleet", "get", "db", "app"]).output == "kept")
            #expect(try vault(["--vault", b, "group", "resync", "fleet"]).status == 9, "etcd out of reach")
            // Removing a fleet group on one machine says what it removed: that machine's copy only; without
            // --force, the advice is not to remove its items (which would go from every machine).
            let refused = try vault(["--vault", b, "group", "rm", "fleet"])
            #expect(refused.status == 2 && refused.errors.contains("--force removes this machine's copy"), "\(refused)")
            let removed = try vault(["--vault", b, "group", "rm", "fleet", "--force"])
            #expect(removed.status == 0, "\(removed.errors)")
            #expect(
                removed.errors.contains("removed this machine's copy of fleet group fleet")
                    && removed.errors.contains("etcd and the other machines keep the group"), "\(removed.errors)")
            #expect(try vault(["--vault", a, "--group", "fleet", "get", "db", "app"]).output == "kept")
            // Removed from the fleet, etcd included: only with --force, and the message says what went.
            let unforced = try vault(["--vault", a, "group", "rm", "fleet", "--everywhere"])
            #expect(unforced.status == 2 && unforced.errors.contains("give --force"), "\(unforced)")
            let everywhere = try vault(["--vault", a, "group", "rm", "fleet", "--force", "--everywhere"])
            #expect(
                everywhere.status == 0
                    && everywhere.errors.contains("removed fleet group fleet from the fleet: from etcd (1 item"),
                "\(everywhere)")
            let rejoin = try vault(
                [
                    "--vault", b, "group", "join", "fleet", "--etcd", endpoints, "--group-key", keyFile,
                    "--backup-key-file", transport,
                ])
            #expect(rejoin.status == 1 && rejoin.errors.contains("removed from the fleet"), "\(rejoin)")
        }
    }

    /// `group rotate` and `group revoke` from the CLI: the rotation seals the group's key to the 3 machines
    /// and its item again; the revocation (by an id prefix from `group machines`) seals it to the other
    /// 2, which go on reading and writing, while the revoked machine is refused and a key file exported
    /// before the rotations no longer joins.
    @Test func aFleetGroupsKeyIsRotatedAndAMachineRevokedFromTheCLI() throws {
        let endpoints = try TestCluster.require().joined(separator: ",")
        try withTemporaryVault("fleet-cli-rot") { t in
            let (a, b, r, d) = (t.root + "/a", t.root + "/b", t.root + "/r", t.root + "/d")
            for path in [a, b, r, d] { #expect(try vault(["--vault", path, "init"]).status == 0) }
            #expect(try vault(["--vault", a, "group", "create", "rot", "--etcd", endpoints]).status == 0)
            let transport = t.root + "/transport.key"
            try #require(
                FileManager.default.createFile(
                    atPath: transport, contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                    attributes: [.posixPermissions: 0o600]))
            let keyFile = t.root + "/rot.key"
            #expect(
                try vault(["--vault", a, "group", "export-key", "rot", keyFile, "--backup-key-file", transport])
                    .status == 0)
            let join = [
                "group", "join", "rot", "--etcd", endpoints, "--group-key", keyFile, "--backup-key-file", transport,
            ]
            for path in [b, r] { #expect(try vault(["--vault", path] + join).status == 0) }
            #expect(try vault(["--vault", a, "--group", "rot", "put", "db", "app"], input: "P1").status == 0)

            let machines = try vault(["--vault", r, "group", "machines", "rot"])
            let lines = machines.output.split(separator: "\n")
            #expect(machines.status == 0 && lines.count == 3, "\(machines)")
            let rLine = try #require(lines.first { $0.hasSuffix("\tthis machine") }, "\(machines)")
            let rID = String(rLine.split(separator: "\t")[0])
            #expect(rID.count == 16)

            let rotate = try vault(["--vault", a, "group", "rotate", "rot"])
            #expect(rotate.status == 0, "\(rotate)")
            #expect(rotate.errors.contains("rotated the key of fleet group rot: generation 2, sealed to 3 machines"))
            #expect(rotate.errors.contains("1 item and 0 kept versions sealed again"), "\(rotate.errors)")
            #expect(try vault(["--vault", a, "group", "revoke", "rot"]).status == 2, "MACHINE is missing")
            let revoke = try vault(["--vault", a, "group", "revoke", "rot", String(rID.prefix(6))])
            #expect(revoke.status == 0 && revoke.errors.contains("revoked \(rID)"), "\(revoke)")
            #expect(revoke.errors.contains("generation 3, sealed to 2 machines"), "\(revoke.errors)")

            #expect(try vault(["--vault", b, "--group", "rot", "get", "db", "app"]).output == "P1")
            #expect(try vault(["--vault", b, "--group", "rot", "put", "db", "app"], input: "P2").status == 0)
            #expect(try vault(["--vault", a, "--group", "rot", "get", "db", "app"]).output == "P2")
            let refused = try vault(["--vault", r, "--group", "rot", "get", "db", "app"])
            #expect(refused.status == 4 && refused.errors.contains("not among the machines"), "\(refused)")
            #expect(refused.output.isEmpty)
            let stale = try vault(["--vault", d] + join)
            #expect(stale.status == 4 && stale.errors.contains("rotated since"), "\(stale)")
            #expect(try vault(["--vault", a, "group", "machines", "rot"]).output.split(separator: "\n").count == 2)
        }
    }

    /// A machine whose libcurl cannot be loaded (here a libcurl.so.4 without its functions, found first
    /// through LD_LIBRARY_PATH) cannot reach etcd at all: a read of a fleet group fails naming libcurl,
    /// instead of answering from the cache as if etcd were down.
    @Test func withoutAUsableLibcurlAFleetReadFailsNamingIt() throws {
        let endpoints = try TestCluster.require().joined(separator: ",")
        try withTemporaryVault("fleet-no-curl") { t in
            let path = t.root + "/a"
            #expect(try vault(["--vault", path, "init"]).status == 0)
            let create = try vault(["--vault", path, "group", "create", "fleet", "--etcd", endpoints])
            #expect(create.status == 0, "\(create.errors)")
            #expect(
                try vault(["--vault", path, "--group", "fleet", "put", "db", "app"], input: "fleet secret").status == 0)
            let fake = t.root + "/lib"
            try FileManager.default.createDirectory(atPath: fake, withIntermediateDirectories: true)
            try Data("int vault_test_nothing(void) { return 0; }\n".utf8).write(to: URL(fileURLWithPath: fake + "/x.c"))
            let compiled = try FleetTestSupport.run(
                "/usr/bin/cc", ["-shared", "-fPIC", "-o", fake + "/libcurl.so.4", fake + "/x.c"],
                environment: ["PATH": "/usr/bin:/bin"], seconds: 60)
            try #require(compiled.status == 0, "\(compiled)")
            let get = try vault(
                ["--vault", path, "--group", "fleet", "get", "db", "app"], environment: ["LD_LIBRARY_PATH": fake])
            #expect(get.status != 0, "\(get)")
            #expect(get.output.isEmpty, "\(get)")
            #expect(get.errors.contains("libcurl.so.4 has no curl_global_init"), "\(get)")
            #expect(!get.errors.contains("out of reach"), "\(get)")
            // With the real libcurl the same read works.
            let real = try vault(["--vault", path, "--group", "fleet", "get", "db", "app"])
            #expect(real.status == 0 && real.output == "fleet secret", "\(real)")
        }
    }

    /// The usage errors of `group join` name the command once (then the help hint), and `group
    /// export-key` of a group that does not exist is "not found" (exit 1), as for the other group
    /// commands; of a group that is not a fleet group, a usage error (exit 2). No etcd is needed.
    @Test func joinUsageAndExportKeyOfAMissingGroup() throws {
        try withTemporaryVault("fleet-cli-usage") { t in
            let path = t.root + "/v"
            #expect(try vault(["--vault", path, "init"]).status == 0)
            let noEtcd = try vault(["--vault", path, "group", "join", "fleet", "--group-key", t.root + "/k"])
            #expect(noEtcd.status == 2)
            #expect(
                noEtcd.errors == "vault: group join: needs --etcd URL[,URL…] (see 'vault group join --help')\n",
                "\(noEtcd.errors)")
            let noKey = try vault(["--vault", path, "group", "join", "fleet", "--etcd", "http://127.0.0.1:9"])
            #expect(noKey.status == 2)
            #expect(
                noKey.errors
                    == "vault: group join: needs --group-key FILE (from `vault group export-key`) (see 'vault group "
                    + "join --help')\n", "\(noKey.errors)")

            let missing = try vault(["--vault", path, "group", "export-key", "nosuch", t.root + "/nosuch.key"])
            #expect(missing.status == 1, "\(missing.errors)")
            #expect(
                missing.errors == "vault: group export-key: there is no group nosuch in the vault at \(path)\n",
                "\(missing.errors)")
            #expect(!FileManager.default.fileExists(atPath: t.root + "/nosuch.key"))
            #expect(try vault(["--vault", path, "group", "create", "local"]).status == 0)
            let local = try vault(["--vault", path, "group", "export-key", "local", t.root + "/local.key"])
            #expect(local.status == 2 && local.errors.contains("not a fleet group"), "\(local.errors)")
            #expect(!FileManager.default.fileExists(atPath: t.root + "/local.key"))
        }
    }
}
