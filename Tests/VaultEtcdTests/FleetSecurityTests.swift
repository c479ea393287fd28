import Foundation
import Testing
import Vault
import VaultFleet
import VaultSystem
import VaultTestSupport

/// Fleet groups through the CLI on one-member clusters of the test's own: mutual TLS with a CA made
/// here (`EtcdSecurityTests.makeCertificates`), and etcd's user authentication. Two vault directories
/// stand for two hosts. (`EtcdSecurityTests` covers the etcd client itself.)
@Suite(.serialized) struct FleetSecurityTests {

    static func vault(_ path: String, _ arguments: [String], input: String = "") throws -> FleetTestSupport.Outcome {
        try FleetTestSupport.vault(["--vault", path] + arguments, input: input)
    }

    static func setMode(_ path: String, _ mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    }

    @Test func credentialsOverPlainHTTPOffThisMachineAreRefusedUnlessALabSaysSo() throws {
        try withTemporaryVault("fleet-plain-http") { t in
            #expect(try Self.vault(t.path, ["init"]).status == 0)
            let passwordFile = t.root + "/etcd-password"
            try "not-sent\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
            try Self.setMode(passwordFile, 0o600)
            // TEST-NET-1 (RFC 5737): no host answers there, and nothing may be sent to it either way.
            let options = [
                "--etcd", "http://192.0.2.1:2379", "--etcd-user", "app", "--etcd-password-file", passwordFile,
            ]
            let refused = try Self.vault(t.path, ["group", "create", "fleet"] + options)
            #expect(refused.status == 2, "\(refused)")
            #expect(refused.errors.contains("clear text to http://192.0.2.1:2379"), "\(refused.errors)")
            #expect(refused.errors.contains("https://") && refused.errors.contains("--etcd-plain-http-credentials"))
            #expect(!FileManager.default.fileExists(atPath: t.path + "/groups/fleet"))
            // Loopback and https endpoints keep the password on this machine or inside TLS.
            for endpoint in ["http://127.0.0.1:9", "http://localhost:9", "http://[::1]:9", "https://192.0.2.1:2379"] {
                var settings = FleetSettings(endpoints: [endpoint])
                settings.user = "app"
                #expect(settings.credentialsRefusal == nil, "\(endpoint)")
            }
            var lab = FleetSettings(endpoints: ["http://127.0.0.1:9", "http://10.1.2.3:2379"])
            lab.user = "app"
            #expect(lab.credentialsRefusal?.contains("http://10.1.2.3:2379") == true)
            lab.sendsCredentialsInTheClear = true
            #expect(lab.credentialsRefusal == nil)
            lab.user = nil
            lab.sendsCredentialsInTheClear = false
            #expect(lab.credentialsRefusal == nil, "no user, no credentials to keep")
        }
    }

    @Test func aFleetGroupOverMutualTLSWorksFromTheCLIAndAWrongCAOrNoClientCertificateIsRefused() throws {
        try withTemporaryVault("fleet-tls") { t in
            let certificates = t.root + "/certs"
            try FileManager.default.createDirectory(atPath: certificates, withIntermediateDirectories: true)
            try EtcdSecurityTests().makeCertificates(in: certificates)
            let flags =
                "--cert-file \(certificates)/server.pem --key-file \(certificates)/server.key "
                + "--trusted-ca-file \(certificates)/ca.pem --client-cert-auth"
            try FleetTestSupport.withCluster(
                "tls", members: 1,
                environment: [
                    "VAULT_ETCD_SCHEME": "https", "VAULT_ETCD_FLAGS": flags, "ETCDCTL_CACERT": "\(certificates)/ca.pem",
                    "ETCDCTL_CERT": "\(certificates)/client.pem", "ETCDCTL_KEY": "\(certificates)/client.key",
                ]
            ) { cluster in
                let endpoint = cluster.endpoints[0]
                #expect(endpoint.hasPrefix("https://127.0.0.1:"))
                let a = t.root + "/a"
                let b = t.root + "/b"
                let keyFile = t.root + "/fleet.key"
                for path in [a, b] { #expect(try Self.vault(path, ["init"]).status == 0) }
                func options(ca: String = "ca.pem", certificate: Bool = true) -> [String] {
                    ["--etcd", endpoint, "--etcd-ca", "\(certificates)/\(ca)"]
                        + (certificate
                            ? ["--etcd-cert", "\(certificates)/client.pem", "--etcd-key", "\(certificates)/client.key"]
                            : [])
                }
                let create = try Self.vault(a, ["group", "create", "fleet"] + options())
                #expect(create.status == 0 && create.errors.contains("created fleet group fleet"), "\(create)")
                #expect(
                    try Self.vault(
                        a, ["--passphrase-fd", "0", "group", "export-key", "fleet", keyFile], input: "transport\n"
                    ).status == 0)
                // fleet.conf names the files, and holds nothing of theirs.
                let conf = try String(contentsOfFile: a + "/groups/fleet/fleet.conf", encoding: .utf8)
                #expect(conf.contains("ca-file=\(certificates)/ca.pem"), "\(conf)")
                #expect(conf.contains("certificate-file=\(certificates)/client.pem"), "\(conf)")
                #expect(!conf.contains("BEGIN"), "\(conf)")

                // A CA that did not sign the server's certificate: refused, naming the certificate problem.
                let wrongCA = try Self.vault(
                    b,
                    ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile]
                        + options(ca: "other.pem"), input: "transport\n")
                #expect(wrongCA.status != 0 && wrongCA.errors.contains("certificate"), "\(wrongCA)")
                print("join with a wrong CA: \(wrongCA)")
                // etcd asks for a client certificate (--client-cert-auth): none is refused.
                let noCertificate = try Self.vault(
                    b,
                    ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile]
                        + options(certificate: false), input: "transport\n")
                #expect(noCertificate.status != 0, "\(noCertificate)")
                print("join without a client certificate: \(noCertificate)")
                let join = try Self.vault(
                    b, ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile] + options(),
                    input: "transport\n")
                #expect(join.status == 0, "the right join after refused ones: \(join)")

                let secret = "tls-secret-\(UUID().uuidString)"
                let put = try Self.vault(a, ["--group", "fleet", "put", "tls-service", "tls-account"], input: secret)
                #expect(put.status == 0, "\(put)")
                let get = try Self.vault(b, ["--group", "fleet", "get", "tls-service", "tls-account"])
                #expect(get.status == 0 && get.output == secret, "\(get)")
                // And the other way, through the Swift API of a process with VaultFleet.
                let client = try Client(applicationIdentifier: "svc", accessGroups: ["fleet"])
                let second = try Vault.open(at: b, client: client, fleet: .etcd())
                let item = try ItemKey(service: "tls-service", account: "tls-account", group: try AccessGroup("fleet"))
                #expect(try second.data(for: item) == Data(secret.utf8))
                try second.set(Data("tls-secret-from-b".utf8), for: item)
                let back = try Self.vault(a, ["--group", "fleet", "get", "tls-service", "tls-account"])
                #expect(back.status == 0 && back.output == "tls-secret-from-b", "\(back)")
                try cluster.expectNoPlaintext([secret, "tls-secret-from-b", "tls-service", "tls-account"])
            }
        }
    }

    @Test func aFleetGroupWithEtcdAuthWorksAndAWrongPasswordIsRefusedNamingTheUserNeverThePassword() throws {
        try withTemporaryVault("fleet-auth") { t in
            try FleetTestSupport.withCluster("auth", members: 1) { cluster in
                let endpoint = cluster.endpoints[0]
                let password = "app-password-\(UUID().uuidString)"
                let wrongPassword = "wrong-password-\(UUID().uuidString)"
                let rootPassword = "root-password-\(UUID().uuidString)"
                let setup = """
                    set -e
                    export ETCDCTL_API=3
                    etcdctl --endpoints "$1" user add "root:$3" >/dev/null
                    etcdctl --endpoints "$1" user add "app:$2" >/dev/null
                    etcdctl --endpoints "$1" role add app >/dev/null
                    etcdctl --endpoints "$1" role grant-permission app --prefix=true readwrite /vault/ >/dev/null
                    etcdctl --endpoints "$1" user grant-role app app >/dev/null
                    etcdctl --endpoints "$1" auth enable >/dev/null
                    """
                try #require(
                    try ChildProcess.run(
                        "/bin/bash", arguments: ["-c", setup, "auth", endpoint, password, rootPassword]
                    ).exitStatus == 0)
                let good = t.root + "/etcd-password"
                let goodOnB = t.root + "/etcd-password-b"
                let wrong = t.root + "/etcd-wrong-password"
                for path in [good, goodOnB] {
                    try (password + "\n").write(toFile: path, atomically: true, encoding: .utf8)
                }
                try (wrongPassword + "\n").write(toFile: wrong, atomically: true, encoding: .utf8)
                for path in [good, goodOnB, wrong] { try Self.setMode(path, 0o600) }
                let a = t.root + "/a"
                let b = t.root + "/b"
                let keyFile = t.root + "/fleet.key"
                for path in [a, b] { #expect(try Self.vault(path, ["init"]).status == 0) }
                func options(_ passwordFile: String) -> [String] {
                    ["--etcd", endpoint, "--etcd-user", "app", "--etcd-password-file", passwordFile]
                }
                func expectRefusal(_ outcome: FleetTestSupport.Outcome, _ what: String) {
                    #expect(outcome.status != 0 && !outcome.timedOut, "\(what): \(outcome)")
                    #expect(outcome.errors.contains("user app"), "\(what) names the user: \(outcome.errors)")
                    for text in [outcome.output, outcome.errors] {
                        #expect(!text.contains(wrongPassword) && !text.contains(password), "\(what) shows a password")
                    }
                    print("\(what): \(outcome)")
                }
                // A group made with the wrong password: refused, and none is made (the create that follows
                // would be refused otherwise).
                // A password file every user can read: refused before anything is sent, naming the fix.
                try Self.setMode(good, 0o644)
                let readable = try Self.vault(a, ["group", "create", "fleet"] + options(good))
                #expect(readable.status == 4 && readable.errors.contains("chmod o-rwx \(good)"), "\(readable)")
                #expect(!readable.errors.contains(password) && !readable.output.contains(password))
                try Self.setMode(good, 0o640)  // its owner's and its group's, as a shared group's members need
                expectRefusal(
                    try Self.vault(a, ["group", "create", "fleet"] + options(wrong)), "create, wrong password")
                let create = try Self.vault(a, ["group", "create", "fleet"] + options(good))
                #expect(create.status == 0, "\(create)")
                #expect(
                    try Self.vault(
                        a, ["--passphrase-fd", "0", "group", "export-key", "fleet", keyFile], input: "transport\n"
                    ).status == 0)
                let conf = try String(contentsOfFile: a + "/groups/fleet/fleet.conf", encoding: .utf8)
                #expect(conf.contains("user=app") && conf.contains("password-file=\(good)"), "\(conf)")
                #expect(!conf.contains(password), "fleet.conf holds the password")

                expectRefusal(
                    try Self.vault(
                        b, ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile] + options(wrong),
                        input: "transport\n"),
                    "join, wrong password")
                // A key file that others can read holds the group's keys for them too: refused, nothing joined.
                try Self.setMode(keyFile, 0o640)
                let exposed = try Self.vault(
                    b, ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile] + options(goodOnB),
                    input: "transport\n")
                #expect(exposed.status == 4 && exposed.errors.contains("chmod 600 \(keyFile)"), "\(exposed)")
                #expect(!FileManager.default.fileExists(atPath: b + "/groups/fleet"), "a refused join made the group")
                try Self.setMode(keyFile, 0o600)
                let join = try Self.vault(
                    b, ["--passphrase-fd", "0", "group", "join", "fleet", "--group-key", keyFile] + options(goodOnB),
                    input: "transport\n")
                #expect(join.status == 0, "the right join after a refused one: \(join)")

                let secret = "auth-secret-\(UUID().uuidString)"
                #expect(
                    try Self.vault(a, ["--group", "fleet", "put", "auth-service", "auth-account"], input: secret).status
                        == 0)
                let get = try Self.vault(b, ["--group", "fleet", "get", "auth-service", "auth-account"])
                #expect(get.status == 0 && get.output == secret, "\(get)")

                // The password file of a's group (b has its own) now holds a wrong password: a put is refused, naming the
                // user, through the CLI and the Swift API, and nothing changes.
                let cacheBefore = FleetFaultTests.itemFiles(a + "/groups/fleet")
                try (wrongPassword + "\n").write(toFile: good, atomically: true, encoding: .utf8)
                try Self.setMode(good, 0o600)
                expectRefusal(
                    try Self.vault(
                        a, ["--group", "fleet", "put", "auth-service", "auth-account"], input: "auth-secret-lost"),
                    "put, wrong password")
                let client = try Client(applicationIdentifier: "svc", accessGroups: ["fleet"])
                let first = try Vault.open(at: a, client: client, fleet: .etcd())
                let item = try ItemKey(
                    service: "auth-service", account: "auth-account", group: try AccessGroup("fleet"))
                let refused = #expect(throws: VaultError.self) {
                    try first.set(Data("auth-secret-lost".utf8), for: item)
                }
                #expect(refused?.message.contains("user app") == true, "\(String(describing: refused))")
                #expect(refused?.message.contains(wrongPassword) == false, "the Swift API's error shows the password")
                print("Swift API put, wrong password: \(String(describing: refused))")
                #expect(FleetFaultTests.itemFiles(a + "/groups/fleet") == cacheBefore, "a's cache changed")
                let unchanged = try Self.vault(b, ["--group", "fleet", "get", "auth-service", "auth-account"])
                #expect(unchanged.status == 0 && unchanged.output == secret, "\(unchanged)")

                // etcdctl as root (app may read only under /vault/).
                let asRoot = FleetTestSupport.Cluster(
                    state: cluster.state, endpoints: cluster.endpoints,
                    etcdctlEnvironment: ["ETCDCTL_USER": "root:\(rootPassword)"])
                try asRoot.expectNoPlaintext([secret, "auth-secret-lost", "auth-service", "auth-account"])
            }
        }
    }
}
