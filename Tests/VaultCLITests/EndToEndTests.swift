import Foundation
import Testing
import VaultTestSupport

/// The `vault` binary run as a subprocess on temp vaults.
@Suite struct EndToEndTests {
    /// Whether `errors` is one `vault: ` line that names `path`, and not twice in a row (a prefix
    /// `vault: PATH: ` before a message that names it again).
    static func namesThePath(_ errors: String, _ path: String) -> Bool {
        let prefix = "vault: \(path): "
        return errors.hasPrefix("vault: ") && errors.contains(path)
            && !(errors.hasPrefix(prefix) && errors.dropFirst(prefix.count).contains(path))
    }

    // MARK: init

    @Test func initCreatesTheVaultAndRefusesAnExistingOne() throws {
        try withScratch { scratch in
            let first = try scratch.run(["init"])
            #expect(first.status == 0)
            #expect(first.output.isEmpty)
            #expect(
                first.errors
                    == "vault: created a vault at \(scratch.vault) (its master key in \(scratch.vault)/master.key)\n")
            let attributes = try FileManager.default.attributesOfItem(atPath: scratch.vault)
            #expect((attributes[.posixPermissions] as? Int) == 0o700)
            #expect(FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
            let again = try scratch.run(["init"])
            #expect(again.status == 3)
            #expect(Self.namesThePath(again.errors, scratch.vault))
            #expect(again.errors.filter { $0 == "\n" }.count == 1)
        }
    }

    @Test func theVaultComesFromVAULT_DIRWithoutTheOption() throws {
        try withScratch { scratch throws in
            let env = ["VAULT_DIR": scratch.vault]
            #expect(try scratch.run(["init"], environment: env, vaultOption: false).status == 0)
            #expect(try scratch.run(["put", "s"], input: Data("v"), environment: env, vaultOption: false).status == 0)
            #expect(try scratch.run(["get", "s"]).text == "v")
        }
    }

    // MARK: put, add, get

    @Test func binarySecretsWithNULBytesRoundTrip() throws {
        try withScratch(initialized: true) { scratch in
            let secret = Data([0, 0, 1, 0] + (0...255).map { UInt8($0) } + [0, 10, 0])
            let put = try scratch.run(["put", "binary", "acct"], input: secret)
            #expect(put.status == 0)
            #expect(put.output.isEmpty && put.errors.isEmpty)
            let get = try scratch.run(["get", "binary", "acct"])
            #expect(get.status == 0)
            #expect(get.output == secret)
            #expect(get.errors.isEmpty)
        }
    }

    @Test func stdinIsKeptExactlyUnlessTrimmed() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "kept"], input: Data("pw\n"))
            try scratch.run(["put", "--trim", "trimmed"], input: Data("pw\n\n"))
            try scratch.run(["put", "trimmed-once", "--trim"], input: Data("pw"))
            #expect(try scratch.run(["get", "kept"]).output == Data("pw\n"))
            #expect(try scratch.run(["get", "trimmed"]).output == Data("pw\n"))
            #expect(try scratch.run(["get", "trimmed-once"]).output == Data("pw"))
        }
    }

    @Test func putReplacesAndAddRefusesAnExistingItem() throws {
        try withScratch(initialized: true) { scratch in
            #expect(try scratch.run(["put", "db", "app", "--label", "Database"], input: Data("one")).status == 0)
            let before = try scratch.run(["get", "--json", "db", "app"]).json() as! [String: Any]
            Thread.sleep(forTimeInterval: 1.1)
            #expect(try scratch.run(["put", "db", "app", "--comment", "rotated"], input: Data("two")).status == 0)
            let after = try scratch.run(["get", "--json", "db", "app"]).json() as! [String: Any]
            #expect(after["secret"] as? String == "two")
            #expect(after["label"] as? String == "Database")
            #expect(after["comment"] as? String == "rotated")
            #expect(after["created"] as? String == before["created"] as? String)
            #expect(after["modified"] as? String != before["modified"] as? String)

            let add = try scratch.run(["add", "db", "app"], input: Data("three"))
            #expect(add.status == 3)
            #expect(
                add.errors == "vault: service \"db\", account \"app\": already exists (vault put replaces an item)\n")
            #expect(try scratch.run(["get", "db", "app"]).text == "two")
            #expect(try scratch.run(["add", "db", "other"], input: Data("four")).status == 0)
            #expect(try scratch.run(["get", "db", "other"]).text == "four")
        }
    }

    @Test func getJSONCarriesAttributesAndTheSecret() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(
                ["put", "api", "bot", "--label", "API token", "--comment", "from CI"], input: Data("tök€n"))
            let text = try scratch.run(["get", "api", "bot", "--json"])
            #expect(text.status == 0)
            #expect(text.output.last == UInt8(ascii: "\n"))
            let object = try text.json() as! [String: Any]
            #expect(object["kind"] as? String == "generic")
            #expect(object["service"] as? String == "api")
            #expect(object["account"] as? String == "bot")
            #expect(object["group"] as? String == "vault")
            #expect(object["label"] as? String == "API token")
            #expect(object["comment"] as? String == "from CI")
            #expect(object["secret"] as? String == "tök€n")
            #expect(object["secretEncoding"] as? String == "utf8")
            let created = try #require(object["created"] as? String)
            #expect(try Date(created, strategy: .iso8601).timeIntervalSinceNow < 60)

            let binary = Data([0xff, 0x00, 0xfe, 0x80])
            try scratch.run(["put", "raw"], input: binary)
            let raw = try scratch.run(["get", "raw", "--json"]).json() as! [String: Any]
            #expect(raw["secretEncoding"] as? String == "base64")
            #expect(Data(base64Encoded: raw["secret"] as! String) == binary)
        }
    }

    @Test func aMissingItemIsExitStatusOne() throws {
        try withScratch(initialized: true) { scratch in
            let get = try scratch.run(["get", "nothing", "here"])
            #expect(get.status == 1)
            #expect(get.output.isEmpty)
            #expect(get.errors == "vault: service \"nothing\", account \"here\": not found (searched group vault)\n")
            #expect(try scratch.run(["rm", "nothing"]).status == 1)
        }
    }

    @Test func emptyAndOversizedInputAreRefused() throws {
        try withScratch(initialized: true) { scratch in
            let empty = try scratch.run(["put", "s"])
            #expect(empty.status == 2)
            #expect(empty.errors == "vault: standard input: no secret: standard input is empty\n")
            let trimmedEmpty = try scratch.run(["put", "--trim", "s"], input: Data("\n"))
            #expect(trimmedEmpty.status == 2)
            let huge = try scratch.run(["put", "s"], input: Data(count: 16_000_001))
            #expect(huge.status == 2)
            #expect(huge.errors.contains("larger than 16 MB"))
            #expect(try scratch.run(["get", "s"]).status == 1)
        }
    }

    @Test func aSixteenMegabyteSecretIsAccepted() throws {
        try withScratch(initialized: true) { scratch throws in
            let secret = Data((0..<16_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            #expect(try scratch.run(["put", "big"], input: secret).status == 0)
            #expect(try scratch.run(["get", "big"]).output == secret)
        }
    }

    // MARK: rm

    @Test func removeOneItemOrAllOfAService() throws {
        try withScratch(initialized: true) { scratch in
            for account in ["a", "b", "c"] { try scratch.run(["put", "svc", account], input: Data(account)) }
            try scratch.run(["put", "other"], input: Data("o"))
            let rm = try scratch.run(["rm", "svc", "a"])
            #expect(rm.status == 0 && rm.output.isEmpty && rm.errors.isEmpty)
            #expect(try scratch.run(["get", "svc", "a"]).status == 1)
            #expect(try scratch.run(["get", "svc", "b"]).status == 0)
            #expect(try scratch.run(["rm", "--all", "svc"]).status == 0)
            #expect(try scratch.run(["get", "svc", "c"]).status == 1)
            #expect(try scratch.run(["rm", "--all", "svc"]).status == 1)
            #expect(try scratch.run(["get", "other"]).text == "o")
        }
    }

    // MARK: ls

    @Test func listIsTabSeparatedWithoutSecrets() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "db", "app", "--label", "main\tdb"], input: Data("SECRET-ONE"))
            try scratch.run(["put", "api"], input: Data("SECRET-TWO"))
            try scratch.run(
                ["put", "--server", "example.com", "--protocol", "https", "me"], input: Data("SECRET-THREE"))
            let ls = try scratch.run(["ls"])
            #expect(ls.status == 0)
            #expect(!ls.text.contains("SECRET"))
            let lines = ls.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.count == 4 && lines[3] == "")
            let rows = lines.dropLast().map {
                $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            }
            #expect(rows.allSatisfy { $0.count == 7 })
            #expect(rows.map { $0[0] } == ["generic", "generic", "internet"])
            #expect(rows.map { $0[1] } == ["api", "db", "https://example.com"])
            #expect(rows.map { $0[2] } == ["", "app", "me"])
            #expect(rows.map { $0[3] } == ["vault", "vault", "vault"])
            #expect(rows[1][4] == "main\\tdb")
            #expect(rows.allSatisfy { $0[5].hasSuffix("Z") && $0[6].hasSuffix("Z") })

            let filtered = try scratch.run(["ls", "--service", "db"])
            #expect(filtered.text.hasPrefix("generic\tdb\tapp\t"))
            #expect(filtered.text.split(separator: "\n").count == 1)
            let servers = try scratch.run(["ls", "--server", "example.com"])
            #expect(servers.text.hasPrefix("internet\thttps://example.com\tme\t"))
        }
    }

    /// `vault uuid`'s identifiers are the vault's, not the user's items: `ls` shows them when asked.
    @Test func deviceIdentifiersAreListedOnlyWhenAskedFor() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "db", "app"], input: Data("s"))
            #expect(try scratch.run(["uuid"]).status == 0)
            let plain = try scratch.run(["ls"])
            #expect(plain.status == 0)
            #expect(plain.text.contains("db") && !plain.text.contains("vault.device-identifier"), "\(plain.text)")
            let json = try #require(try scratch.run(["ls", "--json"]).json() as? [[String: Any]])
            #expect(json.count == 1)
            for asked in [["ls", "--all"], ["ls", "--service", "vault.device-identifier"]] {
                let listed = try scratch.run(asked)
                #expect(listed.text.contains("vault.device-identifier"), "\(asked): \(listed.text)")
            }
        }
    }

    @Test func listJSONIsAnArrayOfItems() throws {
        try withScratch(initialized: true) { scratch in
            #expect(try scratch.run(["ls", "--json"]).json() as? [Any] != nil)
            #expect(try scratch.run(["ls"]).output.isEmpty)
            try scratch.run(["put", "db", "app", "--label", "L"], input: Data("SECRET"))
            try scratch.run(
                ["put", "--server", "h.example", "--port", "8443", "--path", "/x", "u"], input: Data("SECRET"))
            let ls = try scratch.run(["ls", "--json"])
            #expect(!ls.text.contains("SECRET"))
            let items = try #require(ls.json() as? [[String: Any]])
            #expect(items.count == 2)
            #expect(items[0]["service"] as? String == "db")
            #expect(items[0]["label"] as? String == "L")
            #expect(items[0]["secret"] == nil)
            #expect(items[1]["kind"] as? String == "internet")
            #expect(items[1]["server"] as? String == "h.example")
            #expect(items[1]["port"] as? Int == 8443)
            #expect(items[1]["path"] as? String == "/x")
        }
    }

    // MARK: Internet passwords

    @Test func internetPasswordsArePutGotAndRemovedByServer() throws {
        try withScratch(initialized: true) { scratch in
            let name = ["--server", "mail.example", "--protocol", "imaps", "--port", "993", "alice"]
            #expect(try scratch.run(["put"] + name, input: Data("mailpw")).status == 0)
            #expect(try scratch.run(["get"] + name).text == "mailpw")
            let json = try scratch.run(["get", "--json"] + name).json() as! [String: Any]
            #expect(json["protocol"] as? String == "imaps")
            #expect(json["port"] as? Int == 993)
            #expect(json["service"] == nil)
            // The name is exact: another port is another item.
            #expect(try scratch.run(["get", "--server", "mail.example", "--protocol", "imaps", "alice"]).status == 1)
            // A generic password of the same name is another item.
            #expect(try scratch.run(["get", "mail.example", "alice"]).status == 1)
            #expect(try scratch.run(["add"] + name, input: Data("x")).status == 3)
            #expect(try scratch.run(["put"] + name, input: Data("new")).status == 0)
            #expect(try scratch.run(["get"] + name).text == "new")
            #expect(try scratch.run(["rm"] + name).status == 0)
            #expect(try scratch.run(["get"] + name).status == 1)
            try scratch.run(["put", "--server", "s.example", "a"], input: Data("1"))
            try scratch.run(["put", "--server", "s.example", "--port", "22", "b"], input: Data("2"))
            #expect(try scratch.run(["rm", "--all", "--server", "s.example"]).status == 0)
            #expect(try scratch.run(["ls"]).output.isEmpty)
        }
    }

    // MARK: uuid

    @Test func theDeviceIdentifierIsCreatedOnceAndKept() throws {
        try withScratch(initialized: true) { scratch in
            let first = try scratch.run(["uuid", "--json"]).json() as! [String: Any]
            #expect(first["created"] as? Bool == true)
            #expect(first["key"] as? String == "vault")
            let uuid = try #require(first["uuid"] as? String)
            #expect(UUID(uuidString: uuid) != nil)
            #expect(uuid == uuid.lowercased())
            let plain = try scratch.run(["uuid"])
            #expect(plain.text == uuid + "\n")
            let second = try scratch.run(["uuid", "--json"]).json() as! [String: Any]
            #expect(second["created"] as? Bool == false)
            #expect(second["uuid"] as? String == uuid)
            let other = try scratch.run(["uuid", "worker-1"]).text
            #expect(other != plain.text)
            #expect(try scratch.run(["uuid", "worker-1"]).text == other)
        }
    }

    // MARK: Client identity and groups

    @Test func theClientComesFromTheFlagsElseTheEnvironment() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["--app", "com.example.web", "put", "token"], input: Data("web"))
            try scratch.run(
                ["put", "token"], input: Data("default"), environment: ["VAULT_APP_ID": "com.example.worker"])
            // The default client ("vault") sees neither.
            #expect(try scratch.run(["get", "token"]).status == 1)
            #expect(try scratch.run(["--app", "com.example.web", "get", "token"]).text == "web")
            #expect(
                try scratch.run(["get", "token"], environment: ["VAULT_APP_ID": "com.example.worker"]).text == "default"
            )
            // --app wins over the environment.
            #expect(
                try scratch.run(
                    ["get", "token", "--app", "com.example.web"], environment: ["VAULT_APP_ID": "com.example.worker"]
                )
                .text == "web")
            // A shared group from the environment: adds go to the first group, and every client that has the
            // group sees the item.
            try scratch.run(
                ["put", "shared-token"], input: Data("shared"),
                environment: ["VAULT_APP_ID": "com.example.web", "VAULT_ACCESS_GROUPS": "TEAM.shared"])
            #expect(try scratch.run(["--group", "TEAM.shared", "get", "shared-token"]).text == "shared")
            #expect(try scratch.run(["--app", "com.example.web", "get", "shared-token"]).status == 1)
            let json =
                try scratch.run(["--group", "TEAM.shared", "get", "--json", "shared-token"]).json() as! [String: Any]
            #expect(json["group"] as? String == "TEAM.shared")
            // An invalid group name is a usage error.
            #expect(try scratch.run(["--group", ".hidden", "ls"]).status == 2)
        }
    }

    @Test func theClientCanComeFromAnEntitlementsFile() throws {
        try withScratch(initialized: true) { scratch in
            let file = scratch.root + "/entitlements.json"
            try Data(#"{"application-identifier": "TEAM.com.example.app", "keychain-access-groups": ["TEAM.shared"]}"#)
                .write(to: URL(fileURLWithPath: file))
            let env = ["VAULT_ENTITLEMENTS": file]
            #expect(try scratch.run(["put", "s"], input: Data("v"), environment: env).status == 0)
            let item = try scratch.run(["get", "--json", "s"], environment: env).json() as! [String: Any]
            #expect(item["group"] as? String == "TEAM.shared")
            let groups = try scratch.run(["groups"], environment: env).text
            #expect(groups == "TEAM.com.example.app\t-\t-\t0\tyes\tyes\nTEAM.shared\tprivate\t-\t1\tyes\tdefault\n")
            // A broken entitlements file is a usage error that names it.
            let broken = try scratch.run(["ls"], environment: ["VAULT_ENTITLEMENTS": scratch.root + "/missing.json"])
            #expect(broken.status == 2)
            #expect(
                broken.errors.hasPrefix("vault: client: cannot read the entitlements file \(scratch.root)/missing.json")
            )
        }
    }

    @Test func theReadmeFirstUseWorks() throws {
        try withScratch { scratch in
            // The README's main job after the install step, with this build of vault on PATH.
            let script = """
                export VAULT_DIR="$(mktemp -d -p '\(scratch.root)')/vault" && vault init \
                  && printf '%s' 'correct horse battery staple' | vault put demo-service demo-account \
                  && vault get demo-service demo-account
                """
            let shell = Process()
            shell.executableURL = URL(fileURLWithPath: "/bin/sh")
            shell.arguments = ["-c", script]
            shell.environment = scratch.environment.merging(
                ["PATH": vaultExecutable.deletingLastPathComponent().path + ":/usr/bin:/bin"]) { $1 }
            let pipe = Pipe()
            shell.standardOutput = pipe
            try shell.run()
            let output = pipe.fileHandleForReading.readDataToEndOfFile()
            shell.waitUntilExit()
            #expect(shell.terminationStatus == 0)
            #expect(output == Data("correct horse battery staple"))
        }
    }

    @Test func groupsListsPresentGroupsAndTheClientsAccess() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["--app", "com.example.web", "put", "a"], input: Data("1"))
            try scratch.run(["--app", "com.example.web", "put", "b"], input: Data("2"))
            try scratch.run(["--group", "shared", "put", "c"], input: Data("3"))
            let table = try scratch.run(["--app", "com.example.web", "groups"])
            #expect(table.status == 0)
            #expect(table.text == "com.example.web\tprivate\t-\t2\tyes\tdefault\nshared\tprivate\t-\t1\tyes\tno\n")
            let json = try scratch.run(["groups", "--json"]).json() as! [[String: Any]]
            #expect(json.map { $0["name"] as? String } == ["com.example.web", "shared", "vault"])
            #expect(json.map { $0["items"] as? Int } == [2, 1, 0])
            #expect(json.map { $0["present"] as? Bool } == [true, true, false])
            // `usable`: this process holds the key (the owner of a format-1 vault holds every one);
            // `entitled`: the client's groups name it.
            #expect(json.map { $0["usable"] as? Bool } == [true, true, true])
            #expect(json.map { $0["entitled"] as? Bool } == [false, false, true])
            #expect(json.map { $0["default"] as? Bool } == [false, false, true])
        }
    }

    // MARK: check and integrity

    @Test func checkReportsDamagedFilesByPath() throws {
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "one"], input: Data("1"))
            try scratch.run(["put", "two"], input: Data("2"))
            let clean = try scratch.run(["check"])
            #expect(clean.status == 0 && clean.output.isEmpty && clean.errors.isEmpty)
            let report = try scratch.run(["check", "--json"]).json() as! [String: Any]
            #expect(report["items"] as? Int == 2)
            #expect(report["groups"] as? Int == 1)
            #expect((report["damaged"] as? [Any])?.isEmpty == true)

            let group = scratch.vault + "/groups/vault"
            let files = try FileManager.default.contentsOfDirectory(atPath: group).filter { $0.hasSuffix(".item") }
                .sorted()
            #expect(files.count == 2)
            let damaged = group + "/" + files[0]
            var bytes = try Data(contentsOf: URL(fileURLWithPath: damaged))
            bytes[bytes.count - 3] ^= 0x40
            try bytes.write(to: URL(fileURLWithPath: damaged))

            let check = try scratch.run(["check"])
            #expect(check.status == 6)
            let lines = check.errors.split(separator: "\n").map(String.init)
            #expect(lines.count == 2)
            #expect(lines[0].hasPrefix("vault: \(damaged): failed authentication"))
            #expect(lines[1].hasPrefix("vault: check: 1 of 2 item files failed verification; "), "\(lines[1])")
            let json = try scratch.run(["check", "--json"])
            #expect(json.status == 6)
            let damage = try #require((try json.json() as! [String: Any])["damaged"] as? [[String: Any]])
            #expect(damage.map { $0["path"] as? String } == [damaged])
            // Reading the damaged item is an integrity error too, whichever of the two it is.
            let statuses = Set(try ["one", "two"].map { try scratch.run(["get", $0]).status })
            #expect(statuses == [0, 6])
        }
    }

    // MARK: Exit codes of failures around the vault

    @Test func noVaultIsExitStatusEightWithTheInitHint() throws {
        try withScratch { scratch in
            for command in [["get", "x"], ["ls"], ["put", "x"], ["uuid"], ["groups"], ["check"], ["rm", "x"]] {
                let result = try scratch.run(command, input: Data("s"))
                #expect(result.status == 8, "\(command)")
                #expect(Self.namesThePath(result.errors, scratch.vault), "\(result.errors)")
                #expect(result.errors.contains("vault init"))
                #expect(result.errors.filter { $0 == "\n" }.count == 1)
            }
        }
    }

    @Test func anUnsafeVaultDirectoryIsAccessDenied() throws {
        try withScratch(initialized: true) { scratch in
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: scratch.vault)
            let result = try scratch.run(["get", "x"])
            #expect(result.status == 4)
            #expect(Self.namesThePath(result.errors, scratch.vault))
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: scratch.vault)
            try FileManager.default.setAttributes(
                [.posixPermissions: 0o644], ofItemAtPath: scratch.vault + "/master.key")
            #expect(try scratch.run(["ls"]).status == 4)
        }
    }

    @Test func aVaultPathThroughAFileIsAnIOError() throws {
        try withScratch { scratch in
            _ = FileManager.default.createFile(atPath: scratch.root + "/file", contents: Data("x"))
            let initResult = try runVault(
                ["--vault", scratch.root + "/file/vault", "init"], input: Data(), environment: scratch.environment,
                scratch: scratch.root)
            #expect(initResult.status == 7)
            let get = try runVault(
                ["--vault", scratch.root + "/file/vault", "get", "x"], input: Data(), environment: scratch.environment,
                scratch: scratch.root)
            #expect(get.status == 7)
            #expect(Self.namesThePath(get.errors, "\(scratch.root)/file/vault"))
        }
    }

    @Test func usageErrorsAreExitStatusTwoOnOneLine() throws {
        try withScratch(initialized: true) { scratch in
            let cases: [([String], String)] = [
                ([], "vault: no command given (see 'vault --help')\n"),
                (["frob"], "vault: unknown command 'frob' (see 'vault --help')\n"),
                (
                    ["kv", "get", "secret/db"],
                    "vault: unknown command 'kv': this is vault, the keychain for Linux, not HashiCorp Vault (whose "
                        + "CLI is also called vault; run it by its full path); here secrets are read with `vault get "
                        + "SERVICE [ACCOUNT]`, stored with `vault put`, listed with `vault ls` (see 'vault --help')\n"
                ),
                (["get", "--frob", "x"], "vault: get: unknown option --frob (see 'vault get --help')\n"),
                (["get"], "vault: get: missing operand SERVICE (see 'vault get --help')\n"),
                (["put", "a", "b", "c"], "vault: put: unexpected operand 'c' (see 'vault put --help')\n"),
            ]
            for (arguments, message) in cases {
                let result = try scratch.run(arguments)
                #expect(result.status == 2, "\(arguments)")
                #expect(result.errors == message)
                #expect(result.output.isEmpty)
            }
        }
    }

    // MARK: Help and version

    @Test func helpForTheToolListsCommandsAndExitCodes() throws {
        try withScratch { scratch in
            for arguments in [["--help"], ["-h"], ["help"]] {
                let help = try scratch.run(arguments, vaultOption: false)
                #expect(help.status == 0)
                #expect(help.errors.isEmpty)
                #expect(help.text.hasPrefix("usage: vault "))
                for command in ["init", "put", "add", "get", "rm", "ls", "uuid", "groups", "check", "completion"] {
                    #expect(help.text.contains("\n  \(command) "), "\(command)")
                }
                for status in 0...8 { #expect(help.text.contains("\n  \(status)  "), "exit status \(status)") }
            }
            let version = try scratch.run(["--version"], vaultOption: false)
            #expect(version.status == 0)
            #expect(version.text.hasPrefix("vault "))
        }
    }

    @Test(arguments: ["init", "put", "add", "get", "rm", "ls", "uuid", "groups", "check", "completion"])
    func helpForEachCommand(_ command: String) throws {
        try withScratch { scratch in
            for arguments in [[command, "--help"], [command, "-h"], ["help", command]] {
                let help = try scratch.run(arguments, vaultOption: false)
                #expect(help.status == 0)
                #expect(help.text.hasPrefix("usage: vault \(command)"))
                #expect(help.text.contains("global options:"))
                #expect(help.errors.isEmpty)
            }
        }
    }

    @Test func helpNamesTheOptionsOfPut() throws {
        try withScratch { scratch in
            let help = try scratch.run(["put", "--help"], vaultOption: false).text
            for option in [
                "--trim", "--label", "--comment", "--server", "--protocol", "--port", "--path", "--vault", "--app",
                "--group",
            ] {
                #expect(help.contains(option), "\(option)")
            }
            #expect(help.contains("standard input"))
        }
    }

    // MARK: Quiet success

    @Test func putPrintsNothingAndNeverTheSecret() throws {
        try withScratch(initialized: true) { scratch in
            let put = try scratch.run(["put", "s", "a"], input: Data("TOP-SECRET-VALUE"))
            #expect(put.output.isEmpty && put.errors.isEmpty)
            let failed = try scratch.run(["add", "s", "a"], input: Data("TOP-SECRET-VALUE"))
            #expect(!failed.errors.contains("TOP-SECRET"))
        }
    }
}
