import Foundation
import Testing
import VaultTestSupport

@testable import VaultCLI

/// `vault run` and `vault inject` through the built binary, with real programs (sh, cat, stat) as the
/// programs that receive the secrets.
@Suite struct RunInjectTests {
    /// A vault with two secrets, and a private runtime directory on /dev/shm (tmpfs) as
    /// $XDG_RUNTIME_DIR, so that what a run leaves behind can be seen apart from other tests'.
    struct Setup {
        let scratch: Scratch
        let runtime: String

        static func with(_ body: (Setup) throws -> Void) throws {
            try withScratch(initialized: true) { scratch in
                let runtime = "/dev/shm/vault-test-run-" + UUID().uuidString
                try FileManager.default.createDirectory(
                    atPath: runtime, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
                defer { try? FileManager.default.removeItem(atPath: runtime) }
                #expect(try scratch.run(["put", "db", "app"], input: Data("s3cret pw".utf8)).status == 0)
                #expect(try scratch.run(["put", "api"], input: Data("tok-123".utf8)).status == 0)
                try body(Setup(scratch: scratch, runtime: runtime))
            }
        }

        var environment: [String: String] { ["XDG_RUNTIME_DIR": runtime] }

        func run(_ arguments: [String], input: Data = Data()) throws -> RunResult {
            try scratch.run(arguments, input: input, environment: environment)
        }

        func shell(_ command: String) throws -> RunResult {
            try scratch.shell(command, environment: environment)
        }

        /// What is left in the runtime directory.
        func leftovers() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: runtime) }
    }

    @Test func filesInCredentialsDirectoryOnMemoryReadOnlyAndGoneAfterwards() throws {
        try Setup.with { setup in
            let script = """
                d="$CREDENTIALS_DIRECTORY"; echo "$d"; cat "$d/password"; echo; cat "$d/token"; echo
                stat -c '%a' "$d" "$d/password"; stat -f -c '%T' "$d"; exit 3
                """
            let result = try setup.run([
                "run", "--secret", "password=db/app", "--secret", "token=api", "--", "sh", "-c", script,
            ])
            #expect(result.status == 3, "\(result.errors)")
            let lines = result.text.split(separator: "\n").map(String.init)
            try #require(lines.count == 6, "\(result.text) \(result.errors)")
            #expect(lines[0].hasPrefix(setup.runtime + "/vault-run."))
            #expect(lines[1] == "s3cret pw")
            #expect(lines[2] == "tok-123")
            #expect(lines[3] == "500")
            #expect(lines[4] == "400")
            #expect(lines[5] == "tmpfs")
            #expect(!FileManager.default.fileExists(atPath: lines[0]))
            #expect(try setup.leftovers().isEmpty)
        }
    }

    @Test func aServicesRuntimeDirectoryComesFirst() throws {
        try Setup.with { setup in
            let service = setup.runtime + "/service"
            try FileManager.default.createDirectory(atPath: service, withIntermediateDirectories: false)
            let result = try setup.scratch.run(
                ["run", "--secret", "p=db/app", "--", "sh", "-c", "echo \"$CREDENTIALS_DIRECTORY\""],
                environment: setup.environment.merging(["RUNTIME_DIRECTORY": service + ":/elsewhere"]) { $1 })
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.text.hasPrefix(service + "/vault-run."), "\(result.text)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: service).isEmpty)
        }
    }

    @Test func environmentModePutsTheSecretInTheNamedVariableOnly() throws {
        try Setup.with { setup in
            let result = try setup.run([
                "run", "--env", "TOKEN=api", "--", "sh", "-c",
                "printf '%s|%s' \"$TOKEN\" \"${CREDENTIALS_DIRECTORY-unset}\"",
            ])
            #expect(result.status == 0, "\(result.errors)")
            #expect(result.text == "tok-123|unset")
            #expect(try setup.leftovers().isEmpty)
        }
    }

    @Test func optionsAfterTheCommandAreTheCommandsAndItsStatusComesBack() throws {
        try Setup.with { setup in
            // No `--`: the options after COMMAND are COMMAND's.
            let listed = try setup.run(["run", "--secret", "p=db/app", "sh", "-c", "ls -a \"$CREDENTIALS_DIRECTORY\""])
            #expect(listed.status == 0, "\(listed.errors)")
            #expect(listed.text.split(separator: "\n").contains("p"))
            #expect(try setup.run(["run", "--", "sh", "-c", "exit 42"]).status == 42)
            #expect(try setup.run(["run", "--", "sh", "-c", "kill -TERM $$"]).status == 128 + 15)
            let missing = try setup.run(["run", "--", "no-such-program-here"])
            #expect(missing.status == 127)
            #expect(missing.errors.contains("no-such-program-here: command not found"))
        }
    }

    @Test func signalsSentToVaultReachTheProgram() throws {
        try Setup.with { setup in
            // Not INT or QUIT: a non-interactive shell's background job ignores those, and so do vault
            // and the program, as they would without vault.
            for (signal, number) in [("TERM", 15), ("HUP", 1), ("USR1", 10), ("USR2", 12)] {
                // The program says it is ready once its trap is set; vault gets the signal, not the program.
                let result = try setup.shell(
                    """
                    ready=$(mktemp -u); mkfifo "$ready"
                    "$V" --vault "$D" run --secret p=db/app -- sh -c \
                        'trap "kill \\$!; echo got \(signal); exit \(number)" \(signal); echo > '"$ready"'; sleep 20 & wait' &
                    pid=$!
                    read _ < "$ready"; rm -f "$ready"
                    kill -\(signal) $pid
                    wait $pid
                    """)
                #expect(result.status == Int32(number), "\(signal): \(result.errors)")
                #expect(result.text == "got \(signal)\n", "\(signal)")
            }
            #expect(try setup.leftovers().isEmpty)
        }
    }

    @Test func vaultKilledWithSIGKILLLeavesNothingReadable() throws {
        try Setup.with { setup in
            let result = try setup.shell(
                """
                ready=$(mktemp -u); mkfifo "$ready"
                "$V" --vault "$D" run --secret p=db/app -- sh -c \
                    'echo "$CREDENTIALS_DIRECTORY" > '"$ready"'; sleep 3; cat "$CREDENTIALS_DIRECTORY/p" \
                    && echo STILL-READABLE' &
                pid=$!
                read dir < "$ready"; rm -f "$ready"
                test -r "$dir/p" || echo NOT-WRITTEN
                kill -KILL $pid
                for i in $(seq 100); do test -e "$dir" || break; sleep 0.05; done
                test -e "$dir" && echo LEFT-BEHIND
                sleep 3.5
                """)
            #expect(!result.text.contains("NOT-WRITTEN"), "\(result.errors)")
            #expect(!result.text.contains("LEFT-BEHIND"))
            #expect(!result.text.contains("STILL-READABLE"))
            #expect(try setup.leftovers().isEmpty)
        }
    }

    @Test func aMissingSecretStopsBeforeTheProgramStarts() throws {
        try Setup.with { setup in
            let marker = setup.scratch.root + "/ran"
            let result = try setup.run([
                "run", "--secret", "p=db/app", "--secret", "q=nothing/here", "--", "touch", marker,
            ])
            #expect(result.status == 1)
            #expect(result.errors.contains("secret \"nothing/here\""), "\(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: marker))
            #expect(try setup.leftovers().isEmpty)
        }
    }

    @Test func aLockedSecretStopsBeforeTheProgramStarts() throws {
        try withScratch { scratch in
            let input = Data("pw\n".utf8)
            #expect(
                try scratch.run(
                    ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: input
                )
                .status == 0)
            #expect(try scratch.run(["put", "svc", "--passphrase-fd", "0"], input: Data("pw\nv".utf8)).status == 0)
            let marker = scratch.root + "/ran"
            let result = try scratch.run(["run", "--secret", "s=svc", "--", "touch", marker])
            #expect(result.status == 5, "\(result.errors)")
            #expect(!FileManager.default.fileExists(atPath: marker))
        }
    }

    @Test func badDeliveriesAreUsageErrorsThatNameThem() throws {
        try Setup.with { setup in
            let cases: [([String], String)] = [
                (["--secret", "a/b=db"], "NAME is a file name"),
                (["--secret", "..=db"], "NAME is a file name"),
                (["--env", "1X=db"], "environment variable's name"),
                (["--env", "X"], "needs NAME=SECRET"),
                (["--secret", "a=db", "--secret", "a=api"], "given twice"),
                (["--secret", "a=@bad group/x"], "bad group"),
                (["--secret", "a=@grp"], "names a group but no service"),
                (["--secret", "a=db", "--env", "CREDENTIALS_DIRECTORY=api"], "names the directory of"),
            ]
            for (options, words) in cases {
                let result = try setup.run(["run"] + options + ["--", "true"])
                #expect(result.status == 2, "\(options)")
                #expect(result.errors.contains(words), "\(options): \(result.errors)")
            }
            #expect(try setup.run(["run", "--secret", "a=db"]).errors.contains("missing COMMAND"))
        }
    }

    @Test func aSecretWithANulByteIsRefusedForTheEnvironment() throws {
        try Setup.with { setup in
            #expect(try setup.run(["put", "bin"], input: Data([0x61, 0, 0x62])).status == 0)
            let result = try setup.run(["run", "--env", "B=bin", "--", "true"])
            #expect(result.status == 2)
            #expect(result.errors.contains("NUL byte"), "\(result.errors)")
            let file = try setup.run([
                "run", "--secret", "b=bin", "--", "sh", "-c", "od -An -c \"$CREDENTIALS_DIRECTORY/b\"",
            ])
            #expect(file.text.contains("a  \\0   b"), "\(file.text)")
        }
    }

    @Test func injectRendersToStandardOutputAndReplacesAFileAtomicallyWithMode0600() throws {
        try Setup.with { setup in
            #expect(try setup.run(["put", "a/b", "x}}y"], input: Data("odd".utf8)).status == 0)
            #expect(try setup.run(["--group", "other", "put", "svc"], input: Data("in-other".utf8)).status == 0)
            let template = setup.scratch.root + "/app.conf.tmpl"
            let text = """
                password = {{ db/app }}
                token={{api}} again {{ api }}
                odd = {{ a\\/b/x\\}\\}y }}
                grouped = {{@other/svc}}
                literal = \\{{ not a placeholder }}

                """
            try text.write(toFile: template, atomically: true, encoding: .utf8)
            let expected = """
                password = s3cret pw
                token=tok-123 again tok-123
                odd = odd
                grouped = in-other
                literal = {{ not a placeholder }}

                """
            let printed = try setup.run(["inject", template])
            #expect(printed.status == 0, "\(printed.errors)")
            #expect(printed.text == expected)
            let output = setup.scratch.root + "/app.conf"
            try "old\n".write(toFile: output, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: output)
            let written = try setup.run(["inject", template, output])
            #expect(written.status == 0, "\(written.errors)")
            #expect(try String(contentsOfFile: output, encoding: .utf8) == expected)
            let mode = try FileManager.default.attributesOfItem(atPath: output)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            // Nothing but the output beside it: the temporary file was renamed, not left.
            let names = try FileManager.default.contentsOfDirectory(atPath: setup.scratch.root)
            #expect(!names.contains { $0.contains("vault-inject") })
        }
    }

    @Test func injectWithAMissingSecretNamesItAndLeavesTheOutputAsItWas() throws {
        try Setup.with { setup in
            let template = setup.scratch.root + "/t"
            try "a = {{ db/app }}\nb = {{ gone/x }}\n".write(toFile: template, atomically: true, encoding: .utf8)
            let output = setup.scratch.root + "/out"
            try "old\n".write(toFile: output, atomically: true, encoding: .utf8)
            let result = try setup.run(["inject", template, output])
            #expect(result.status == 1)
            #expect(result.errors.contains("\(template), line 2: secret \"gone/x\""), "\(result.errors)")
            #expect(try String(contentsOfFile: output, encoding: .utf8) == "old\n")
            try "a = {{ db/app \n".write(toFile: template, atomically: true, encoding: .utf8)
            let unclosed = try setup.run(["inject", template, output])
            #expect(unclosed.status == 2)
            #expect(unclosed.errors.contains("line 1: a placeholder opened with {{ is not closed"))
            #expect(try setup.run(["inject", setup.scratch.root + "/no-such-template"]).status == 2)
        }
    }

    @Test func templateParsing() throws {
        let template = try Template(Array("x{{ s/a }}y\n{{ @g/s2 }}{{s}}".utf8), source: "t")
        #expect(template.references.map(\.text) == ["s/a", "@g/s2", "s"])
        #expect(template.references[1].group?.rawValue == "g")
        #expect(template.references[1].name == .generic(service: "s2", account: ""))
        guard case .secret(_, let line) = template.pieces[3] else {
            Issue.record("\(template.pieces)")
            return
        }
        #expect(line == 2)
        let rendered = template.render([
            template.references[0]: Array("1".utf8), template.references[1]: Array("2".utf8),
            template.references[2]: Array("3".utf8),
        ])
        #expect(String(decoding: rendered, as: UTF8.self) == "x1y\n23")
        // A trailing escaped blank stays part of the name; an account keeps every later slash.
        let spaced = try Template(Array("{{ svc\\  }}{{ s/a/b }}".utf8), source: "t")
        #expect(spaced.references[0].name == .generic(service: "svc ", account: ""))
        #expect(spaced.references[1].name == .generic(service: "s", account: "a/b"))
        // An escaped backslash before a blank does not keep the blank.
        let backslashed = try Template(Array("{{ a\\\\ }}".utf8), source: "t")
        #expect(backslashed.references[0].name == .generic(service: "a\\", account: ""))
        #expect(throws: UsageError.self) { try Template(Array("{{ }}".utf8), source: "t") }
        #expect(throws: UsageError.self) { try Template(Array("{{ a\\".utf8), source: "t") }
    }
}
