import Testing
import VaultTestSupport

@testable import VaultCLI

@Suite struct ParserTests {
    func parse(_ line: String) throws(UsageError) -> Invocation {
        try ArgumentParser.parse(line.split(separator: " ").map(String.init))
    }

    func usageError(_ arguments: [String]) -> UsageError? {
        do {
            _ = try ArgumentParser.parse(arguments)
            return nil
        } catch {
            return error
        }
    }

    @Test func aPutWithServiceAndAccount() throws {
        let invocation = try parse("put db app")
        #expect(invocation.global == GlobalOptions())
        #expect(
            invocation.command
                == .put(
                    PutCommand(
                        name: .generic(service: "db", account: "app"), addOnly: false, trim: false, label: nil,
                        comment: nil)))
    }

    @Test func aMissingAccountIsTheEmptyAccount() throws {
        guard case .get(let get) = try parse("get db").command else {
            Issue.record("not a get")
            return
        }
        #expect(get.name == .generic(service: "db", account: ""))
        #expect(!get.json)
    }

    @Test func optionValuesWithEqualsOrAsTheNextArgument() throws {
        let joined = try ArgumentParser.parse(["--vault=/tmp/v", "put", "--label=my label", "s"])
        let separate = try ArgumentParser.parse(["--vault", "/tmp/v", "put", "--label", "my label", "s"])
        #expect(joined == separate)
        #expect(joined.global.vaultPath == "/tmp/v")
        guard case .put(let put) = joined.command else {
            Issue.record("not a put")
            return
        }
        #expect(put.label == "my label")
        // A value may start with a dash, and may contain '='.
        guard case .put(let other) = try ArgumentParser.parse(["put", "--comment", "-x=y", "s"]).command else {
            Issue.record("not a put")
            return
        }
        #expect(other.comment == "-x=y")
        // `--opt=` is an empty value, not a missing one.
        guard case .put(let empty) = try ArgumentParser.parse(["put", "--label=", "s"]).command else {
            Issue.record("not a put")
            return
        }
        #expect(empty.label == "")
    }

    @Test func globalOptionsGoBeforeOrAfterTheCommand() throws {
        let before = try parse("--vault /v --app com.example --group shared ls")
        let after = try parse("ls --vault /v --app com.example --group shared")
        #expect(before == after)
        #expect(before.global == GlobalOptions(vaultPath: "/v", applicationIdentifier: "com.example", group: "shared"))
        #expect(before.command == .list(ListCommand(service: nil, server: nil, json: false)))
    }

    @Test func doubleDashEndsTheOptions() throws {
        guard case .put(let put) = try ArgumentParser.parse(["put", "--trim", "--", "--label", "-h"]).command else {
            Issue.record("not a put")
            return
        }
        #expect(put.trim)
        #expect(put.label == nil)
        #expect(put.name == .generic(service: "--label", account: "-h"))
        // A lone dash is an operand.
        guard case .get(let get) = try parse("get - x").command else {
            Issue.record("not a get")
            return
        }
        #expect(get.name == .generic(service: "-", account: "x"))
    }

    @Test func unknownOptionsAreUsageErrors() {
        #expect(usageError(["--frobnicate"]) == UsageError("unknown option --frobnicate"))
        #expect(usageError(["get", "--frobnicate", "s"]) == UsageError("unknown option --frobnicate", command: "get"))
        #expect(usageError(["get", "-x", "s"]) == UsageError("unknown option -x", command: "get"))
        #expect(usageError(["get", "-hx", "s"]) == UsageError("unknown option -hx", command: "get"))
        // An option of another command.
        #expect(usageError(["get", "--trim", "s"]) == UsageError("unknown option --trim", command: "get"))
    }

    @Test func missingAndExtraOperandsAreUsageErrors() {
        #expect(usageError([]) == UsageError("no command given"))
        #expect(usageError(["get"]) == UsageError("missing operand SERVICE", command: "get"))
        #expect(usageError(["put"]) == UsageError("missing operand SERVICE", command: "put"))
        #expect(usageError(["rm", "--all"]) == UsageError("missing operand SERVICE", command: "rm"))
        #expect(usageError(["get", "a", "b", "c"]) == UsageError("unexpected operand 'c'", command: "get"))
        #expect(usageError(["init", "x"]) == UsageError("unexpected operand 'x'", command: "init"))
        #expect(usageError(["rm", "--all", "s", "a"]) == UsageError("unexpected operand 'a'", command: "rm"))
        #expect(usageError(["completion"]) == UsageError("missing operand SHELL", command: "completion"))
        #expect(usageError(["frob"]) == UsageError("unknown command 'frob'"))
    }

    @Test func optionValueProblemsAreUsageErrors() {
        #expect(
            usageError(["put", "s", "--label"]) == UsageError("option --label needs a value (TEXT)", command: "put"))
        #expect(usageError(["--vault"]) == UsageError("option --vault needs a value (DIR)"))
        #expect(usageError(["get", "--json=yes", "s"]) == UsageError("option --json takes no value", command: "get"))
        #expect(usageError(["--vault=", "ls"]) == UsageError("--vault needs a directory, not an empty string"))
        #expect(
            usageError(["get", "--port", "443", "s"])
                == UsageError("--port needs --server (it belongs to internet passwords)", command: "get"))
        #expect(
            usageError(["get", "--server", "h", "--port", "70000"])
                == UsageError("--port '70000' is not a number in 0...65535", command: "get"))
        #expect(usageError(["get", "--server", "h", "--protocol", "gopher"])?.message.hasPrefix("--protocol") == true)
        #expect(usageError(["ls", "--service", "s", "--server", "h"])?.command == "ls")
        #expect(
            usageError(["completion", "tcsh"])
                == UsageError("no completion for shell 'tcsh'; the shells are bash, zsh, fish", command: "completion"))
    }

    @Test func internetPasswordNames() throws {
        guard
            case .put(let put) = try parse("put --server example.com --protocol https --port 8443 --path /api me")
                .command
        else {
            Issue.record("not a put")
            return
        }
        #expect(
            put.name
                == .internet(
                    InternetName(server: "example.com", account: "me", protocolCode: "htps", port: 8443, path: "/api")))
        #expect(put.name.description == "server \"https://example.com:8443/api\", account \"me\"")
        // A four-letter code is taken as it is; an internet password has no SERVICE operand.
        guard case .get(let get) = try parse("get --server h --protocol ssh").command else {
            Issue.record("not a get")
            return
        }
        #expect(
            get.name == .internet(InternetName(server: "h", account: "", protocolCode: "ssh ", port: nil, path: nil)))
        #expect(usageError(["get", "--server", "h", "a", "b"]) == UsageError("unexpected operand 'b'", command: "get"))
    }

    @Test func removeAllOfAServiceOrServer() throws {
        #expect(try parse("rm --all db").command == .remove(RemoveCommand(target: .service("db"))))
        #expect(
            try parse("rm --all --server h").command
                == .remove(
                    RemoveCommand(
                        target: .server(InternetName(server: "h", account: "", protocolCode: nil, port: nil, path: nil))
                    )))
        #expect(
            try parse("rm db app").command
                == .remove(RemoveCommand(target: .item(.generic(service: "db", account: "app")))))
    }

    @Test func helpForTheToolAndEachCommand() throws {
        #expect(try parse("--help").command == .help(topic: nil))
        #expect(try parse("-h").command == .help(topic: nil))
        #expect(try parse("help").command == .help(topic: nil))
        #expect(try parse("help put").command == .help(topic: "put"))
        for name in ["init", "put", "add", "get", "rm", "ls", "uuid", "groups", "check", "completion"] {
            #expect(try parse("\(name) --help").command == .help(topic: name))
            #expect(try parse("\(name) -h").command == .help(topic: name))
        }
        // Help wins over missing operands.
        #expect(try parse("get -h").command == .help(topic: "get"))
        #expect(usageError(["help", "frob"]) == UsageError("unknown command 'frob'"))
        #expect(try parse("--version").command == .version)
    }

    @Test func otherCommands() throws {
        #expect(try parse("init").command == .initialize(InitCommand()))
        #expect(try parse("add s").command.isAddOnly)
        #expect(try parse("uuid").command == .uuid(UUIDCommand(key: nil, json: false)))
        #expect(try parse("uuid --json worker").command == .uuid(UUIDCommand(key: "worker", json: true)))
        #expect(try parse("groups --json").command == .groupList(GroupListCommand(json: true)))
        #expect(try parse("check").command == .check(CheckCommand(json: false)))
        #expect(
            try parse("ls --service db --json").command == .list(ListCommand(service: "db", server: nil, json: true)))
        for shell in CompletionCommand.Shell.allCases {
            #expect(try parse("completion \(shell.rawValue)").command == .completion(CompletionCommand(shell: shell)))
        }
        #expect(try parse("put --trim s").command.isTrimmed)
    }

    /// HashiCorp Vault's CLI is also called `vault`: its commands say that this is not it, and what does
    /// the job here.
    @Test func hashiCorpHabitsGetAHint() {
        let cases = [
            ("kv", "vault get SERVICE"), ("status", "vault check"), ("login", "vault unlock"),
            ("version", "vault --version"), ("write", "vault put"),
        ]
        for (name, instead) in cases {
            let message = usageError([name, "get", "secret/x"])?.message ?? ""
            #expect(message.hasPrefix("unknown command '\(name)': "), "\(message)")
            #expect(message.contains("not HashiCorp Vault") && message.contains(instead), "\(name): \(message)")
        }
        #expect(usageError(["frob"]) == UsageError("unknown command 'frob'"))
    }

    @Test func usageErrorsPointToTheRightHelp() {
        #expect(UsageError("no command given").description == "no command given (see 'vault --help')")
        #expect(
            UsageError("missing operand SERVICE", command: "get").description
                == "get: missing operand SERVICE (see 'vault get --help')")
    }

    @Test func everyStatusHasItsExitCode() {
        #expect(ExitCode(.success) == .success)
        #expect(ExitCode(.itemNotFound).rawValue == 1)
        #expect(ExitCode(.param).rawValue == 2)
        #expect(ExitCode(.noSuchAttribute).rawValue == 2)
        #expect(ExitCode(.duplicateItem).rawValue == 3)
        #expect(ExitCode(.duplicateVault).rawValue == 3)
        #expect(ExitCode(.missingEntitlement).rawValue == 4)
        #expect(ExitCode(.permissionDenied).rawValue == 4)
        #expect(ExitCode(.interactionNotAllowed).rawValue == 5)
        #expect(ExitCode(.decode).rawValue == 6)
        #expect(ExitCode(.io).rawValue == 7)
        #expect(ExitCode(.notAvailable).rawValue == 9)
        #expect(ExitCode(.noSuchVault).rawValue == 8)
    }

    @Test func tabSeparatedFieldsAreEscaped() {
        #expect(Output.escape("a\tb\nc\\d\re") == "a\\tb\\nc\\\\d\\re")
        #expect(Output.tabSeparated([["x", "y\tz"], ["", "w"]]) == "x\ty\\tz\n\tw\n")
    }
}

extension Command {
    var isAddOnly: Bool {
        if case .put(let put) = self { return put.addOnly }
        return false
    }

    var isTrimmed: Bool {
        if case .put(let put) = self { return put.trim }
        return false
    }
}
