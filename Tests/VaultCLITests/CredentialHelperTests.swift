import Foundation
import Testing
import VaultTestSupport

/// `git-credential-vault` and `docker-credential-vault`: the `vault` binary under those names, driven by
/// real git and by the docker credential-helpers protocol's own examples.
@Suite struct CredentialHelperTests {
    /// A scratch vault, and a bin directory with the helpers linked to the built binary.
    struct Setup {
        let scratch: Scratch
        let bin: String

        /// Runs `body` with a new setup, removed when `body` ends.
        static func with<R>(_ body: (Setup) throws -> R) throws -> R {
            let setup = try Setup()
            defer { setup.scratch.remove() }
            return try body(setup)
        }

        init() throws {
            scratch = try Scratch()
            bin = scratch.root + "/bin"
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            for name in ["git-credential-vault", "docker-credential-vault"] {
                try FileManager.default.createSymbolicLink(
                    atPath: bin + "/" + name, withDestinationPath: vaultExecutable.path)
            }
        }

        /// Runs `command` with bash: PATH has the helpers, VAULT_DIR is the scratch vault, git reads no
        /// system or user configuration and never prompts.
        func run(_ command: String, input: String = "") throws -> RunResult {
            let environment = [
                "HOME": scratch.root + "/home", "PATH": bin + ":/usr/bin:/bin", "VAULT_DIR": scratch.vault,
                "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "V": vaultExecutable.path,
            ]
            return try runVault(
                ["-c", command], input: Data(input.utf8), environment: environment, scratch: scratch.root,
                executable: URL(fileURLWithPath: "/bin/bash"))
        }

        func git(_ action: String, _ description: String, config: String = "") throws -> RunResult {
            try run("git -c credential.helper=vault \(config) credential \(action)", input: description)
        }
    }

    static let hasGit = FileManager.default.isExecutableFile(atPath: "/usr/bin/git")

    @Test(.enabled(if: hasGit, "needs git (Debian's git package)"))
    func gitApprovesFillsAndRejectsAcrossProcesses() throws {
        try Setup.with { setup in
            let password = "pass with spaces = and é ünïcode"
            let approve = try setup.git(
                "approve", "protocol=https\nhost=git.example\nusername=alice\npassword=\(password)\n\n")
            #expect(approve.status == 0, "\(approve.errors)")
            let fill = try setup.git("fill", "protocol=https\nhost=git.example\n\n")
            #expect(fill.status == 0, "\(fill.errors)")
            #expect(
                fill.text.contains("username=alice\n") && fill.text.contains("password=\(password)\n"), "\(fill.text)")
            // The same item for the CLI and the Security module: an internet password.
            let ls = try setup.run(#""$V" ls --server git.example"#)
            #expect(ls.text.contains("https://git.example\talice"), "\(ls.text)")
            let get = try setup.run(#""$V" get --server git.example --protocol https alice"#)
            #expect(get.text == password)
            // … and an internet password to code written for Apple's Security framework, as the CLI's client.
            let peer = vaultExecutable.deletingLastPathComponent().appendingPathComponent("vault-security-peer").path
            let security = try setup.run("VAULT_APP_ID=vault '\(peer)' get-internet git.example alice")
            #expect(security.text == password, "\(security.errors)")
            let reject = try setup.git("reject", "protocol=https\nhost=git.example\nusername=alice\n\n")
            #expect(reject.status == 0)
            let after = try setup.git("fill", "protocol=https\nhost=git.example\n\n")
            #expect(after.status != 0 && !after.text.contains("password="), "\(after.text)")
        }
    }

    @Test(.enabled(if: hasGit, "needs git (Debian's git package)"))
    func hostsUsersAndPathsStayApart() throws {
        try Setup.with { setup in
            for (host, user, pass) in [
                ("a.example", "u1", "p-a-u1"), ("a.example", "u2", "p-a-u2"), ("b.example", "u1", "p-b"),
            ] {
                #expect(
                    try setup.git("approve", "protocol=https\nhost=\(host)\nusername=\(user)\npassword=\(pass)\n\n")
                        .status
                        == 0)
            }
            let u2 = try setup.git("fill", "protocol=https\nhost=a.example\nusername=u2\n\n")
            #expect(u2.text.contains("password=p-a-u2\n"), "\(u2.text)")
            let b = try setup.git("fill", "protocol=https\nhost=b.example\n\n")
            #expect(b.text.contains("username=u1\n") && b.text.contains("password=p-b\n"), "\(b.text)")
            let port = try setup.git("fill", "protocol=https\nhost=b.example:8443\n\n")
            #expect(!port.text.contains("password="), "another port is another credential: \(port.text)")
            // credential.useHttpPath: the path is part of the credential.
            let config = "-c credential.useHttpPath=true"
            #expect(
                try setup.git(
                    "approve", "protocol=https\nhost=c.example\npath=org/one.git\nusername=u\npassword=one\n\n",
                    config: config
                ).status == 0)
            let one = try setup.git("fill", "protocol=https\nhost=c.example\npath=org/one.git\n\n", config: config)
            #expect(one.text.contains("password=one\n"), "\(one.text)")
            let two = try setup.git("fill", "protocol=https\nhost=c.example\npath=org/two.git\n\n", config: config)
            #expect(!two.text.contains("password="), "\(two.text)")
        }
    }

    /// git 2.42 on: a `reject` carrying another helper's stale password must not erase this one's.
    @Test func eraseWithAPasswordErasesOnlyThatPassword() throws {
        try Setup.with { setup throws in
            let stored = "protocol=https\nhost=e.example\nusername=u\npassword=good\n\n"
            #expect(try setup.run("git-credential-vault store", input: stored).status == 0)
            let stale = "protocol=https\nhost=e.example\nusername=u\npassword=stale\n\n"
            #expect(try setup.run("git-credential-vault erase", input: stale).status == 0)
            #expect(
                try setup.run("git-credential-vault get", input: "protocol=https\nhost=e.example\n\n").text.contains(
                    "password=good"))
            #expect(try setup.run("git-credential-vault erase", input: stored).status == 0)
            #expect(try setup.run(#""$V" ls"#).text.isEmpty)
        }
    }

    /// Debian 12's git (2.39) sends none of these: the helper is driven directly.
    @Test func theHelperKeepsExpiryAndRefreshTokenAndIgnoresUnknownKeys() throws {
        try Setup.with { setup in
            let store = try setup.run(
                "git-credential-vault store",
                input: "protocol=https\nhost=h.example\nusername=u\npassword=p\npassword_expiry_utc=2000000000\n"
                    + "oauth_refresh_token=refresh-secret\nwwwauth[]=Basic realm=x\nfuture_key=1\n\n")
            #expect(store.status == 0, "\(store.errors)")
            let get = try setup.run(
                "git-credential-vault get", input: "protocol=https\nhost=h.example\nwwwauth[]=Basic\n\n")
            #expect(get.text.contains("username=u\n") && get.text.contains("password=p\n"), "\(get.text)")
            #expect(get.text.contains("password_expiry_utc=2000000000\n"), "\(get.text)")
            #expect(get.text.contains("oauth_refresh_token=refresh-secret\n"), "\(get.text)")
            #expect(
                try setup.run("git-credential-vault erase", input: "protocol=https\nhost=h.example\nusername=u\n\n")
                    .status
                    == 0)
            #expect(try setup.run(#""$V" ls"#).text.isEmpty)
            // No secret in arguments: the helper reads everything from standard input.
            #expect(try setup.run("git-credential-vault get extra-operand", input: "").status == 2)
        }
    }

    /// A value with a newline would reach git as lines of its own (`url=…`, `quit=1`): never sent,
    /// never stored; and docker gets a secret unchanged or not at all.
    @Test func helpersNeverSendAValueThatBreaksTheirProtocol() throws {
        try Setup.with { setup in
            #expect(try setup.run(#""$V" init"#).status == 0)
            // Stored by the CLI, which takes any bytes: a password with a line for git after it.
            let put = try setup.run(
                #"printf 'secret\nhost=evil.example\nquit=1' | "$V" put --server git.example --protocol https alice"#)
            #expect(put.status == 0, "\(put.errors)")
            let get = try setup.run("git-credential-vault get", input: "protocol=https\nhost=git.example\n\n")
            #expect(get.status == 6, "\(get.errors)")
            #expect(get.text.isEmpty, "\(get.text)")
            #expect(get.errors.contains("holds a newline or NUL"), "\(get.errors)")
            if Self.hasGit {
                let fill = try setup.git("fill", "protocol=https\nhost=git.example\n\n")
                #expect(!fill.text.contains("evil.example") && !fill.text.contains("password=secret"), "\(fill.text)")
            }
            let store = try setup.run(
                "git-credential-vault store", input: "protocol=https\nhost=n.example\nusername=u\npassword=a\u{0}b\n\n")
            #expect(store.status == 2 && store.errors.contains("NUL or newline"), "\(store.errors)")
            #expect(try setup.run(#""$V" ls --server n.example"#).text.isEmpty)
            // docker: a secret that is not UTF-8 is refused, not changed into U+FFFD.
            let binary = try setup.run(
                #"printf 'a\377b' | "$V" put --server registry.example --protocol https --label 'docker credential' bob"#
            )
            #expect(binary.status == 0, "\(binary.errors)")
            let docker = try setup.run("docker-credential-vault get", input: "https://registry.example")
            #expect(docker.status != 0 && !docker.text.contains("Secret"), "\(docker.text)")
        }
    }

    /// The examples of the docker credential-helpers protocol (store, get, list, erase, and a miss).
    @Test func dockerHelperSpeaksTheProtocol() throws {
        try Setup.with { setup in
            let url = "https://index.docker.io/v1/"
            let store = try setup.run(
                "docker-credential-vault store",
                input: #"{"ServerURL":"\#(url)","Username":"david","Secret":"passw0rd1"}"#)
            #expect(store.status == 0, "\(store.text) \(store.errors)")
            let get = try setup.run("docker-credential-vault get", input: url + "\n")
            let credentials = try #require(try JSONSerialization.jsonObject(with: get.output) as? [String: String])
            #expect(credentials == ["ServerURL": url, "Username": "david", "Secret": "passw0rd1"])
            // An internet password for the same server that is not docker's is not listed, nor returned.
            #expect(try setup.run(#"printf x | "$V" put --server other.example --protocol https someone"#).status == 0)
            #expect(
                try setup.run(#"printf x | "$V" put --server index.docker.io --protocol https --path /v1/ someone"#)
                    .status == 0)
            let list = try setup.run("docker-credential-vault list")
            let listed = try #require(try JSONSerialization.jsonObject(with: list.output) as? [String: String])
            #expect(listed == [url: "david"])
            let got = try setup.run("docker-credential-vault get", input: url)
            #expect(got.text.contains(#""Username":"david""#), "the docker item, not the other one: \(got.text)")
            // Another username for the server replaces the first, once it is stored.
            #expect(
                try setup.run(
                    "docker-credential-vault store", input: #"{"ServerURL":"\#(url)","Username":"eve","Secret":"p2"}"#
                ).status == 0)
            let replaced = try setup.run("docker-credential-vault get", input: url)
            #expect(replaced.text.contains(#""Username":"eve""#), "\(replaced.text)")
            #expect(try setup.run("docker-credential-vault erase", input: url).status == 0)
            // The non-docker item of the same server is still there.
            #expect(
                try setup.run(#""$V" get --server index.docker.io --protocol https --path /v1/ someone"#).text == "x")
            let miss = try setup.run("docker-credential-vault get", input: url)
            #expect(miss.status == 1)
            #expect(miss.text == "credentials not found in native keychain\n")
            #expect(
                try setup.run("docker-credential-vault erase", input: url).text
                    == "credentials not found in native keychain\n")
            let empty = try setup.run("docker-credential-vault list")
            #expect(try JSONSerialization.jsonObject(with: empty.output) as? [String: String] == [:])
        }
    }

    /// A docker credential is named by its server URL alone (the username is its comment), so that `store`
    /// and `get` read one file, not every item. Credentials stored with the username as the account (0.1.0) are still read, are hidden by a
    /// new `store` and go with `erase`; an item of the same name that is not docker's is not overwritten.
    @Test func dockerCredentialsAreNamedByTheServerURL() throws {
        try Setup.with { setup in
            let url = "https://r.example:5000/v2/"
            #expect(try setup.run(#""$V" init"#).status == 0)
            let legacyPut = try setup.run(
                #"printf old | "$V" put --server r.example --port 5000 --protocol https --path /v2/ "#
                    + #"--label "Docker Credentials" alice"#)
            #expect(legacyPut.status == 0, "\(legacyPut.errors)")
            let legacy = try setup.run("docker-credential-vault get", input: url)
            #expect(legacy.text.contains(#""Username":"alice""#) && legacy.text.contains(#""Secret":"old""#))

            let store = try setup.run(
                "docker-credential-vault store", input: #"{"ServerURL":"\#(url)","Username":"bob","Secret":"new"}"#)
            #expect(store.status == 0, "\(store.text)")
            let get = try setup.run("docker-credential-vault get", input: url)
            #expect(get.text.contains(#""Username":"bob""#) && get.text.contains(#""Secret":"new""#), "\(get.text)")
            let item = try setup.run(#""$V" ls --server r.example --json"#)
            #expect(item.text.contains(#""account":"""#) && item.text.contains(#""comment":"bob""#), "\(item.text)")

            let list = try setup.run("docker-credential-vault list")
            // 0.1.0 also set the URL as the description, which `vault put` cannot: its item is listed by server.
            let listed = try #require(try JSONSerialization.jsonObject(with: list.output) as? [String: String])
            #expect(listed[url] == "bob", "\(listed)")
            #expect(try setup.run("docker-credential-vault erase", input: url).status == 0)
            let miss = try setup.run("docker-credential-vault get", input: url)
            #expect(miss.text == "credentials not found in native keychain\n", "0.1.0's item went too: \(miss.text)")

            #expect(try setup.run(#"printf mine | "$V" put --server q.example --protocol https"#).status == 0)
            let refused = try setup.run(
                "docker-credential-vault store",
                input: #"{"ServerURL":"https://q.example","Username":"bob","Secret":"s"}"#)
            #expect(refused.status == 3 && refused.text.contains("not a docker credential"), "\(refused.text)")
            #expect(try setup.run(#""$V" get --server q.example --protocol https"#).text == "mine")
        }
    }
}
