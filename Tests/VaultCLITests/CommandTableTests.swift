import Foundation
import Testing

@testable import VaultCLI

/// `ArgumentParser.commandTable`: the one table that the parser, `vault --help`, `vault COMMAND --help`
/// and the completions are made from.
@Suite struct CommandTableTests {
    static let table = ArgumentParser.commandTable

    /// The parser finds a command by the name its entry gives, before the declaration is made: each
    /// entry's name is its declaration's.
    @Test func eachDeclarationIsListedUnderItsOwnName() {
        for (name, info) in ArgumentParser.declarations {
            #expect(info().name == name)
            #expect(ArgumentParser.info(name)?.name == name)
        }
        #expect(Set(ArgumentParser.declarations.map(\.name)).count == ArgumentParser.declarations.count)
    }

    @Test func theToolsHelpListsEveryCommandOptionAndExitStatusOfTheTable() throws {
        try withScratch { scratch in
            let help = try scratch.run(["--help"], vaultOption: false)
            #expect(help.status == 0)
            let lines = help.text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let text = Self.flattened(help.text)
            #expect(lines.allSatisfy { $0.count <= Help.width }, "a line over the width")
            for command in Self.table.commands {
                #expect(lines.contains { $0.hasPrefix("  \(command.name) ") }, "\(command.name)")
                #expect(text.contains(Self.flattened("\(command.name) \(command.summary)")), "\(command.name)")
            }
            for option in Self.table.globalOptions + Self.table.toolOptions {
                #expect(lines.contains { $0.contains("--\(option.name)") }, "\(option.name)")
                #expect(text.contains(Self.flattened(option.help)), "\(option.name)")
            }
            for status in Self.table.exitStatuses {
                #expect(text.contains(Self.flattened("\(status.code.rawValue) \(status.meaning)")), "\(status.code)")
            }
            #expect(Self.table.exitStatuses.map(\.code.rawValue) == Array(0...10))
        }
    }

    /// `text` with every run of spaces and newlines as one space.
    static func flattened(_ text: String) -> String {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).joined(separator: " ")
    }

    /// Subcommands (`vault group create`) too: each has its own help, no line of it over the width.
    @Test func eachCommandsHelpIsItsEntryOfTheTable() throws {
        try withScratch { scratch in
            for (words, command) in Self.table.commandLines {
                let name = words.split(separator: " ").map(String.init)
                for arguments in [name + ["--help"], ["help"] + name] {
                    let help = try scratch.run(arguments, vaultOption: false)
                    #expect(help.status == 0, "\(arguments)")
                    let lines = help.text.split(separator: "\n").map(String.init)
                    // Lines over the width are wrapped: what each must hold is compared with spaces flattened.
                    let text = Self.flattened(help.text)
                    #expect(lines.allSatisfy { $0.count <= Help.width }, "\(command.name): a line over the width")
                    #expect(lines.first?.hasPrefix("usage: ") == true, "\(command.name)")
                    #expect(text.hasPrefix(Self.flattened("usage: \(command.synopsis[0])")), "\(command.name)")
                    for form in command.synopsis.dropFirst() {
                        #expect(text.contains(Self.flattened(form)), "\(command.name): \(form)")
                    }
                    let summary = command.summary.prefix(1).uppercased() + command.summary.dropFirst() + "."
                    #expect(lines.contains(summary), "\(command.name)")
                    #expect(text.contains(Self.flattened(command.details)), "\(command.name)")
                    for option in command.options + Self.table.globalOptions {
                        #expect(lines.contains { $0.contains("--\(option.name)") }, "\(command.name): --\(option.name)")
                        #expect(text.contains(Self.flattened(option.help)), "\(command.name): \(option.help)")
                    }
                }
            }
        }
    }

    /// The parser accepts exactly the options that the table lists for each command and subcommand.
    @Test func theParserTakesEveryOptionOfTheTableAndNoOther() {
        for (words, command) in Self.table.commandLines {
            let name = words.split(separator: " ").map(String.init)
            for option in command.options + Self.table.globalOptions {
                let arguments = name + ["--\(option.name)"] + (option.takesValue ? ["x"] : [])
                let message = usageError(arguments)?.message ?? ""
                #expect(!message.hasPrefix("unknown option"), "\(arguments): \(message)")
            }
            #expect(usageError(name + ["--no-such-option"])?.message == "unknown option --no-such-option")
        }
        for option in Self.table.toolOptions {
            #expect(usageError(["--\(option.name)"]) == nil)
        }
    }

    @Test func helpIsACommandOfTheTable() throws {
        let help = try #require(Self.table.command("help"))
        #expect(help.operands == [OperandSpec("COMMAND", .command)])
        #expect(try ArgumentParser.parse(["help", "help"]).command == .help(topic: "help"))
        #expect(try ArgumentParser.parse(["help", "--help"]).command == .help(topic: "help"))
        #expect(usageError(["help", "get", "put"]) == UsageError("help takes at most one command name"))
    }

    @Test func operandsAndValueKindsAreDeclared() throws {
        let table = Self.table
        #expect(table.command("get")?.operands == [OperandSpec("SERVICE", .service), OperandSpec("ACCOUNT")])
        #expect(table.command("export")?.operands == [OperandSpec("FILE", .file)])
        #expect(table.command("completion")?.operands == [OperandSpec("SHELL", .choice(["bash", "zsh", "fish"]))])
        #expect(table.globalOptions.first { $0.name == "vault" }?.valueKind == .directory)
        #expect(table.globalOptions.first { $0.name == "key-file" }?.valueKind == .file)
        #expect(table.command("ls")?.options.first { $0.name == "service" }?.valueKind == .service)
        #expect(
            table.command("init")?.options.first { $0.name == "kdf-cost" }?.valueKind
                == .choice(["moderate", "interactive", "minimum"]))
        #expect(table.command("rm")?.synopsis.count == 3)
        let scope = table.scopeOptions.map(\.name)
        #expect(Set(["vault", "app", "group", "key-file"]).isSubset(of: scope) && !scope.contains("passphrase-fd"))
        #expect(Set(table.commands.map(\.name)).count == table.commands.count)
        #expect(
            table.command("group")?.subcommands.map(\.name) == [
                "create", "ls", "rm", "rotate", "remove-member", "export-key", "join", "resync", "machines", "revoke",
            ])
        #expect(table.command("group")?.options == [] && table.command("group")?.operands == [])
        #expect(table.command("group")?.subcommand("create")?.operands == [OperandSpec("NAME")])
        #expect(
            table.command("init")?.options.first { $0.name == "kdf-cost" }?.valueKind
                == .choice(["moderate", "interactive", "minimum"]))
        #expect(
            table.commandLines.map(\.words).filter { $0.hasPrefix("group") && $0 != "groups" } == [
                "group", "group create", "group ls", "group rm", "group rotate", "group remove-member",
                "group export-key", "group join", "group resync", "group machines", "group revoke",
            ])
    }

    private func usageError(_ arguments: [String]) -> UsageError? {
        do {
            _ = try ArgumentParser.parse(arguments)
            return nil
        } catch {
            return error
        }
    }
}
