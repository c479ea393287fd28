import Foundation
import Testing
import VaultSystem

@testable import VaultCLI

/// The path of an installed shell, if it is installed (.ci/run installs zsh and fish).
func installedShell(_ name: String) -> String? {
    ["/usr/bin/\(name)", "/bin/\(name)"].first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// A scratch directory with `vault completion SHELL` written to a file, and the ways to run a shell
/// on it with the built `vault` first in PATH.
struct CompletionScratch {
    let scratch: Scratch
    let shell: String
    let script: String

    init(_ shell: String, scratch: Scratch) throws {
        self.scratch = scratch
        self.shell = shell
        let printed = try scratch.run(["completion", shell], vaultOption: false)
        try #require(printed.status == 0, "\(printed.errors)")
        script = scratch.root + "/completion.\(shell)"
        try printed.output.write(to: URL(fileURLWithPath: script))
    }

    var environment: [String: String] {
        scratch.environment.merging(["PATH": vaultExecutable.deletingLastPathComponent().path + ":/usr/bin:/bin"]) {
            $1
        }
    }

    /// Runs the shell with `arguments`.
    func run(_ arguments: [String]) throws -> RunResult {
        try runVault(
            arguments, input: Data(), environment: environment, scratch: scratch.root,
            executable: URL(fileURLWithPath: installedShell(shell)!))
    }

    /// The words that completing the last of `words` offers, sorted.
    func complete(_ words: [String]) throws -> [String] {
        let result: RunResult
        switch shell {
        case "bash": result = try completeInBash(words)
        case "fish":
            let program = "source $argv[1]; complete -C $argv[2] | cut -f1"
            result = try run(["-c", program, script, words.joined(separator: " ")])
        default: result = try completeInZsh(words)
        }
        try #require(result.status == 0, "\(shell) \(words): \(result.errors)")
        return Set(result.text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }).sorted()
    }

    /// Bash as readline runs a completion function: COMP_WORDS and COMP_CWORD set, `_vault` called,
    /// COMPREPLY printed; with the bash-completion package when it is installed (the usual case).
    private func completeInBash(_ words: [String]) throws -> RunResult {
        let program = """
            completions=/usr/share/bash-completion/bash_completion
            if [ -f "$completions" ]; then source "$completions"; fi
            source "$1"; shift
            COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
            COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
            _vault
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        return try run(["-c", program, "bash", script] + words)
    }

    /// zsh's completion system in an interactive zsh on a pseudo-terminal (zpty), with the script
    /// installed as `_vault` in fpath: TAB after the line, every candidate that compadd adds recorded.
    private func completeInZsh(_ words: [String]) throws -> RunResult {
        let functions = scratch.root + "/zsh-functions"
        try FileManager.default.createDirectory(atPath: functions, withIntermediateDirectories: true)
        if !FileManager.default.fileExists(atPath: functions + "/_vault") {
            try FileManager.default.copyItem(atPath: script, toPath: functions + "/_vault")
        }
        let harness = scratch.root + "/zsh-harness"
        try Data(Self.zshHarness.utf8).write(to: URL(fileURLWithPath: harness))
        let out = scratch.root + "/zsh-candidates-\(UUID().uuidString)"
        let line = words.joined(separator: " ")
        let result = try run([harness, functions, out, line])
        let candidates = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
        try #require(candidates.hasSuffix("END\n"), "zsh did not finish completing '\(line)': \(result.errors)")
        return RunResult(
            status: result.status, output: Data(candidates.dropLast(4).utf8), errors: result.errors)
    }

    /// zsh FUNCTIONS OUT LINE: completes LINE and writes each candidate to OUT, then "END".
    static let zshHarness = #"""
        zmodload zsh/zpty
        zpty z zsh -f -i
        zpty -w z "fpath=(${(q)1} \$fpath); PROMPT=''; autoload -U compinit; compinit -u -D"
        zpty -w z "bindkey '^I' complete-word; __out=${(q)2}"
        zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a __hits; builtin compadd -A __hits "$@"; print -rl -- $__hits >> $__out; }'
        zpty -w z 'comppostfuncs=(__done); __done() { print END >> $__out }'
        zpty -w -n z "$3"$'\t'
        integer i
        for ((i = 0; i < 400; i++)); do
            [[ -f $2 ]] && grep -qx END $2 && break
            sleep 0.05
        done
        zpty -d z
        """#
}

/// `vault completion bash|zsh|fish`: scripts generated from the command table, that offer every
/// command and option of it, and never wait for a passphrase.
@Suite struct CompletionTests {
    static let table = ArgumentParser.commandTable

    /// What completing "-" offers for `command` (nil: before a command).
    static func optionWords(_ command: CommandDescription?) -> [String] {
        let options = command.map { $0.options + table.globalOptions } ?? table.globalOptions + table.toolOptions
        return options.flatMap { ["--" + $0.name] + ($0.short.map { ["-\($0)"] } ?? []) }.sorted()
    }

    @Test func anUnknownShellIsAUsageErrorNamingTheShells() throws {
        try withScratch { scratch in
            let result = try scratch.run(["completion", "tcsh"], vaultOption: false)
            #expect(result.status == 2)
            #expect(
                result.errors
                    == "vault: completion: no completion for shell 'tcsh'; the shells are bash, zsh, fish"
                    + " (see 'vault completion --help')\n")
        }
    }

    @Test func theBashScriptIsValidBash() throws {
        try withScratch { scratch in
            let bash = try CompletionScratch("bash", scratch: scratch)
            #expect(try bash.run(["-n", bash.script]).status == 0)
            #expect(try String(contentsOfFile: bash.script, encoding: .utf8).contains("complete -F _vault vault"))
        }
    }

    @Test(.enabled(if: installedShell("zsh") != nil, "zsh is not installed"))
    func theZshScriptIsValidZsh() throws {
        try withScratch { scratch in
            let zsh = try CompletionScratch("zsh", scratch: scratch)
            #expect(try zsh.run(["-n", zsh.script]).status == 0)
            #expect(try String(contentsOfFile: zsh.script, encoding: .utf8).hasPrefix("#compdef vault\n"))
        }
    }

    @Test(.enabled(if: installedShell("fish") != nil, "fish is not installed"))
    func theFishScriptIsValidFish() throws {
        try withScratch { scratch in
            let fish = try CompletionScratch("fish", scratch: scratch)
            let check = try fish.run(["--no-execute", fish.script])
            #expect(check.status == 0, "\(check.errors)")
        }
    }

    /// Through the shell itself: the command names, then for each command (and subcommand) exactly
    /// its options and the global ones, and before a command the global and tool options.
    @Test(arguments: ["bash", "fish"])
    func everyCommandAndOptionOfTheTableIsOffered(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch { scratch in
            let completion = try CompletionScratch(shell, scratch: scratch)
            let table = Self.table
            #expect(try completion.complete(["vault", ""]) == table.commands.map(\.name).sorted())
            #expect(try completion.complete(["vault", "-"]) == Self.optionWords(nil))
            for (words, command) in table.commandLines {
                let line = ["vault"] + words.split(separator: " ").map(String.init) + ["-"]
                #expect(try completion.complete(line) == Self.optionWords(command), "\(words)")
            }
            for command in table.commands where !command.subcommands.isEmpty {
                #expect(
                    try completion.complete(["vault", command.name, ""]) == command.subcommands.map(\.name).sorted())
            }
        }
    }

    /// zsh through its completion system is slower (a pseudo-terminal per line): every command, every
    /// option before a command, and one command's options; the script's text names the rest.
    @Test(.enabled(if: installedShell("zsh") != nil, "zsh is not installed"))
    func everyCommandAndOptionOfTheTableIsInTheZshScript() throws {
        try withScratch { scratch in
            let zsh = try CompletionScratch("zsh", scratch: scratch)
            let table = Self.table
            #expect(try zsh.complete(["vault", ""]) == table.commands.map(\.name).sorted())
            #expect(try zsh.complete(["vault", "-"]) == Self.optionWords(nil))
            let get = try #require(table.command("get"))
            #expect(try zsh.complete(["vault", "get", "-"]) == Self.optionWords(get))
            let text = try String(contentsOfFile: zsh.script, encoding: .utf8)
            let lines = text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            for command in table.commands {
                let line = try #require(lines.first { $0.hasPrefix("\(command.name)) _arguments ") }, "\(command.name)")
                for option in command.options {
                    #expect(line.contains("'--\(option.name)"), "\(command.name) --\(option.name)")
                }
                #expect(text.contains("'\(command.name):\(command.summary)'"), "\(command.name)")
                // A subcommand's line is in the state of its command, after every command's own line.
                for subcommand in command.subcommands {
                    #expect(
                        lines.contains { line in
                            line.hasPrefix("\(subcommand.name)) _arguments ")
                                && subcommand.options.allSatisfy { line.contains("'--\($0.name)") }
                        }, "\(command.name) \(subcommand.name)")
                    #expect(text.contains("'\(subcommand.name):\(subcommand.summary)'"), "\(subcommand.name)")
                }
            }
        }
    }

    /// Option values, operands and service names, the same in every shell.
    @Test(arguments: ["bash", "zsh", "fish"])
    func valuesOperandsAndServicesAreOffered(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch(initialized: true) { scratch in
            try scratch.run(["put", "database"], input: Data("x"))
            try scratch.run(["put", "dashboard"], input: Data("x"))
            try scratch.run(["put", "--server", "mail.example", "alice"], input: Data("x"))
            let completion = try CompletionScratch(shell, scratch: scratch)
            let v = scratch.vault
            #expect(try completion.complete(["vault", "ch"]) == ["check"])
            #expect(try completion.complete(["vault", "get", "--j"]) == ["--json"])
            #expect(try completion.complete(["vault", "--vault", v, "get", "da"]) == ["dashboard", "database"])
            // A global option after the command chooses the vault too.
            #expect(try completion.complete(["vault", "rm", "--vault", v, "d"]) == ["dashboard", "database"])
            #expect(
                try completion.complete(["vault", "--vault", v, "ls", "--service", "d"]) == ["dashboard", "database"])
            // An internet password has no SERVICE operand.
            #expect(try completion.complete(["vault", "--vault", v, "get", "--server", "mail.example", "d"]) == [])
            #expect(
                try completion.complete(["vault", "init", "--kdf-cost", ""]) == ["interactive", "minimum", "moderate"])
            #expect(
                try completion.complete(["vault", "get", "--server", "h", "--protocol", "imap"]) == ["imap", "imaps"])
            #expect(try completion.complete(["vault", "completion", ""]) == ["bash", "fish", "zsh"])
            #expect(try completion.complete(["vault", "help", "co"]) == ["completion", "config"])
        }
    }

    /// Service names are whatever a vault's owner wrote, and the shell completing them may be root's:
    /// before, bash's `compgen -W` expanded `$(…)` in a name and ran it.
    @Test(arguments: ["bash", "zsh", "fish"])
    func serviceNamesAreNeverRunAsCode(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch(initialized: true) { scratch in
            let marker = scratch.root + "/completion-ran-code"
            let hostile = "d$(touch \(marker))`touch \(marker)`"
            try scratch.run(["put", hostile], input: Data("x"))
            let completion = try CompletionScratch(shell, scratch: scratch)
            let offered = try completion.complete(["vault", "--vault", scratch.vault, "get", "d"])
            #expect(!FileManager.default.fileExists(atPath: marker), "completing a service name ran it")
            #expect(offered.count == 1, "\(offered)")
        }
    }

    /// Completion runs `vault ls` while the user types at a terminal: on a vault that needs a
    /// passphrase it must come back at once with nothing, never prompt on /dev/tty and wait. The control
    /// shows that `vault ls` itself does prompt there; the service helper of each shell does not.
    @Test(arguments: ["bash", "zsh", "fish"])
    func serviceNamesNeverWaitForAPassphrase(_ shell: String) throws {
        guard installedShell(shell) != nil else { return }
        try withScratch { scratch in
            let created = try scratch.run(
                ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("pw\n"))
            try #require(created.status == 0, "\(created.errors)")
            try #require(
                try scratch.shell("printf x | \"$V\" --vault \"$D\" put database --passphrase-fd 3 3<<< pw").status == 0
            )
            let completion = try CompletionScratch(shell, scratch: scratch)

            let control = try TerminalSession()
            defer { control.close() }
            let prompting = try control.runAsSessionLeader(
                [vaultExecutable.path, "--vault", scratch.vault, "ls"], environment: completion.environment,
                scratch: scratch)
            #expect(control.waitFor("Enter passphrase"), "the control did not prompt: \(control.text)")
            prompting.killSession()

            let session = try TerminalSession()
            defer { session.close() }
            let helper: [String]
            switch shell {
            case "bash":
                helper = ["bash", "-c", "source '\(completion.script)'; _vault_services --vault '\(scratch.vault)'"]
            case "zsh":
                helper = [
                    "zsh", "-c",
                    "compdef() { :; }; source '\(completion.script)'; __vault_services --vault '\(scratch.vault)'",
                ]
            default:
                helper = ["fish", "-c", "source '\(completion.script)'; __vault_services --vault '\(scratch.vault)'"]
            }
            let started = Date()
            let listing = try session.runAsSessionLeader(helper, environment: completion.environment, scratch: scratch)
            #expect(listing.waitForExit(timeout: 20), "the \(shell) helper waited: \(session.text)")
            #expect(Date().timeIntervalSince(started) < 10)
            #expect(listing.process.terminationStatus == 0)
            #expect(!session.text.contains("passphrase"), "\(session.text)")
        }
    }
}

/// A process that leads a session of its own on a terminal.
struct SessionLeader {
    let process: Process
    /// The session leader's process id, which is also the session's id.
    let leader: pid_t

    /// Waits at most `timeout` seconds for the command to end; if it does not, kills the session (a
    /// hang is a failure rather than a stalled run) and returns false.
    func waitForExit(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        guard process.isRunning else { return true }
        killSession()
        return false
    }

    /// Kills every process of the session, then waits for the command. Killing the command alone is
    /// not enough: Foundation learns that a child ended when a socket that the child's own children
    /// inherit is closed, so a `vault` left waiting at the terminal would keep `waitUntilExit` waiting.
    func killSession() {
        if leader > 0 {
            let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            for pid in processes.compactMap(pid_t.init) where Self.session(of: pid) == leader {
                kill(pid, SIGKILL)
            }
        }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// The session id of `pid`, from /proc/PID/stat (the sixth field; the command name before it is
    /// in parentheses and may hold spaces).
    static func session(of pid: pid_t) -> pid_t? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        return fields.count > 3 ? pid_t(fields[3]) : nil
    }
}

extension TerminalSession {
    /// Starts `arguments` as the leader of a new session whose controlling terminal is this one, as a
    /// login shell is: a `vault` started there can open /dev/tty and prompt on it. Standard streams
    /// are /dev/null; only /dev/tty reaches the terminal.
    func runAsSessionLeader(_ arguments: [String], environment: [String: String], scratch: Scratch) throws
        -> SessionLeader
    {
        let path = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(secondary.rawValue)")
        let pidFile = scratch.root + "/leader-\(UUID().uuidString)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/setsid")
        // -w: wait for the command when setsid has to fork. The new session's leader opens the terminal
        // without O_NOCTTY, which makes it the session's controlling terminal, then becomes the command
        // (same process id).
        process.arguments =
            ["-w", "bash", "-c", "exec 3<>\"$1\"; echo $$ >\"$2\"; shift 2; exec \"$@\"", "-", path, pidFile]
            + arguments
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        var leader: pid_t = 0
        while leader == 0 && Date() < deadline {
            let text = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
            leader = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            if leader == 0 { Thread.sleep(forTimeInterval: 0.01) }
        }
        return SessionLeader(process: process, leader: leader)
    }
}
