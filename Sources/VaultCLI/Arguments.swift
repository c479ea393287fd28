/// An option a command accepts: `--name`, maybe a one-letter `-x`, maybe with a value.
package struct OptionSpec: Sendable, Hashable {
    /// The long name, without the dashes.
    package let name: String
    /// The one-letter name, if any.
    package let short: Character?
    /// The value's name in help (e.g. "DIR"); nil for a flag.
    package let valueName: String?
    /// One line of help.
    package let help: String
    /// What the value is, for completion (`.text` for a flag).
    package let valueKind: ValueKind

    /// A flag (no value).
    package static func flag(_ name: String, short: Character? = nil, _ help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, help: help, valueKind: .text)
    }

    /// An option with a value; `kind` says what completion offers for it.
    package static func value(
        _ name: String, _ valueName: String, _ help: String, kind: ValueKind = .text
    ) -> OptionSpec {
        OptionSpec(name: name, short: nil, valueName: valueName, help: help, valueKind: kind)
    }

    /// Whether it takes a value.
    package var takesValue: Bool { valueName != nil }
}

/// A command line that cannot be run: what is wrong, and the command it concerns (for the help hint).
package struct UsageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The command, or nil for the tool as a whole.
    package let command: String?
    /// What is wrong, e.g. "unknown option --foo".
    package let message: String

    /// Makes an error.
    package init(_ message: String, command: String? = nil) {
        self.message = message
        self.command = command
    }

    /// The message with the help hint.
    package var description: String {
        guard let command else { return "\(message) (see 'vault --help')" }
        return "\(command): \(message) (see 'vault \(command) --help')"
    }
}

/// The options and operands of one command line, after the option syntax has been taken apart.
package struct ParsedArguments: Sendable {
    /// The options in the order given, with their values ("" for a flag).
    package var options: [(name: String, value: String)]
    /// The operands, in order.
    package var operands: [String]

    /// Whether the flag was given.
    package func flag(_ name: String) -> Bool { options.contains { $0.name == name } }

    /// The option's last value, if it was given.
    package func value(_ name: String) -> String? { options.last { $0.name == name }?.value }

    /// Takes `arguments` apart against `specs`: `--name value` and `--name=value` for options with a
    /// value, `-x` for one-letter flags, `--` ends the options, and a lone `-` is an operand. When
    /// `stopAtOperand` is set, parsing stops at the first operand, which starts `rest`.
    static func parse(
        _ arguments: ArraySlice<String>, specs: [OptionSpec], command: String?, stopAtOperand: Bool = false
    ) throws(UsageError) -> (parsed: ParsedArguments, rest: ArraySlice<String>) {
        var parsed = ParsedArguments(options: [], operands: [])
        var index = arguments.startIndex
        var optionsEnded = false
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                if stopAtOperand && !optionsEnded { return (parsed, arguments[(index - 1)...]) }
                parsed.operands.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let spec: OptionSpec
            var inlineValue: String?
            if argument.hasPrefix("--") {
                let body = argument.dropFirst(2)
                let name: Substring
                if let equals = body.firstIndex(of: "=") {
                    name = body[..<equals]
                    inlineValue = String(body[body.index(after: equals)...])
                } else {
                    name = body
                }
                guard let found = specs.first(where: { $0.name == name }) else {
                    throw UsageError("unknown option --\(name)", command: command)
                }
                spec = found
            } else {
                let letters = argument.dropFirst()
                guard letters.count == 1, let found = specs.first(where: { $0.short == letters.first }) else {
                    throw UsageError("unknown option \(argument)", command: command)
                }
                spec = found
            }
            if spec.takesValue {
                if let inlineValue {
                    parsed.options.append((spec.name, inlineValue))
                } else {
                    guard index < arguments.endIndex else {
                        throw UsageError("option --\(spec.name) needs a value (\(spec.valueName!))", command: command)
                    }
                    parsed.options.append((spec.name, arguments[index]))
                    index += 1
                }
            } else {
                if inlineValue != nil {
                    throw UsageError("option --\(spec.name) takes no value", command: command)
                }
                parsed.options.append((spec.name, ""))
            }
        }
        return (parsed, arguments[arguments.endIndex...])
    }
}

/// The options every command accepts, before or after the command name.
package struct GlobalOptions: Sendable, Hashable {
    /// `--vault DIR`: the vault directory.
    package var vaultPath: String?
    /// `--app ID`: the client's application identifier.
    package var applicationIdentifier: String?
    /// `--group G`: the access group to work in.
    package var group: String?
    /// `--key-file PATH`: the master key is in this external file (a systemd credential, say).
    package var keyFile: String?
    /// `--passphrase-fd N`: read passphrases from file descriptor N, one per line, instead of a prompt.
    package var passphraseDescriptor: Int32?

    /// No global options.
    package init(vaultPath: String? = nil, applicationIdentifier: String? = nil, group: String? = nil) {
        self.vaultPath = vaultPath
        self.applicationIdentifier = applicationIdentifier
        self.group = group
    }

    static let specs: [OptionSpec] = [
        .value(
            "vault", "DIR", "the vault directory (default: $VAULT_DIR, else the per-user location)", kind: .directory),
        .value(
            "app", "ID",
            "act as the client with this application identifier (default: from the environment, else \"vault\")"),
        .value("group", "G", "work in access group G: adds go there, searches look only there"),
        .value(
            "key-file", "PATH", "the master key is in this file (default: $VAULT_KEY_FILE, a systemd credential)",
            kind: .file),
        .value("passphrase-fd", "N", "read passphrases from file descriptor N, one per line, instead of a prompt"),
        .flag("help", short: "h", "show help"),
    ]

    mutating func take(_ parsed: ParsedArguments) throws(UsageError) {
        for (name, value) in parsed.options {
            switch name {
            case "vault":
                guard !value.isEmpty else { throw UsageError("--vault needs a directory, not an empty string") }
                vaultPath = value
            case "app": applicationIdentifier = value
            case "group": group = value
            case "key-file":
                guard !value.isEmpty else { throw UsageError("--key-file needs a path, not an empty string") }
                keyFile = value
            case "passphrase-fd":
                guard let fd = Int32(value), fd >= 0 else {
                    throw UsageError("--passphrase-fd needs a file descriptor number, not \"\(value)\"")
                }
                passphraseDescriptor = fd
            default: break
            }
        }
    }
}

/// A parsed command line: the global options and the command to run.
package struct Invocation: Sendable, Hashable {
    /// The global options.
    package var global: GlobalOptions
    /// The command.
    package var command: Command
}

/// What each command declares about itself: its name, options, operands, help, and how to build it
/// from parsed arguments. The table of these is the one source of the help, the shell completions and
/// `ArgumentParser.commandTable`. A command with subcommands (`vault group create`) declares those
/// instead of options and operands of its own.
struct CommandInfo: Sendable {
    let name: String
    let synopsis: String
    let summary: String
    let details: String
    let options: [OptionSpec]
    let operands: [OperandSpec]
    let subcommands: [CommandInfo]
    /// Whether its first operand starts a command line of another program (`vault run`): the options
    /// after it are that program's, not this command's.
    let takesCommandLine: Bool
    let make: @Sendable (ParsedArguments) throws(UsageError) -> Command

    init(
        name: String, synopsis: String, summary: String, details: String, options: [OptionSpec],
        operands: [OperandSpec] = [], takesCommandLine: Bool = false,
        make: @escaping @Sendable (ParsedArguments) throws(UsageError) -> Command
    ) {
        self.takesCommandLine = takesCommandLine
        self.name = name
        self.synopsis = synopsis
        self.summary = summary
        self.details = details
        self.options = options
        self.operands = operands
        self.subcommands = []
        self.make = make
    }

    /// A command made of `subcommands`: its synopsis is theirs, one form per line.
    init(name: String, summary: String, details: String, subcommands: [CommandInfo]) {
        self.name = name
        synopsis = subcommands.map(\.synopsis).joined(separator: "\n       ")
        self.summary = summary
        self.details = details
        options = []
        operands = []
        takesCommandLine = false
        self.subcommands = subcommands
        // The parser picks a subcommand first (`ArgumentParser.parse`); this runs only if it did not.
        make = { _ throws(UsageError) in throw CommandInfo.missingSubcommand(name, subcommands) }
    }

    /// The usage error of a command given without one of its subcommands.
    static func missingSubcommand(_ name: String, _ subcommands: [CommandInfo]) -> UsageError {
        UsageError(
            "missing subcommand; the subcommands are " + subcommands.map(\.name).joined(separator: ", "),
            command: name)
    }

    /// The subcommand named `name`.
    func subcommand(_ name: String) -> CommandInfo? { subcommands.first { $0.name == name } }
}

/// The command-line parser: a pure function from arguments to an invocation.
package enum ArgumentParser {
    /// Every command's name and its declaration, made when asked for: a run makes its own command's
    /// only (all of them, with their help texts, were 280,000 instructions of a `vault get`).
    static let declarations: [(name: String, info: @Sendable () -> CommandInfo)] = [
        ("init", { InitCommand.info }), ("put", { PutCommand.info(add: false) }),
        ("add", { PutCommand.info(add: true) }),
        ("get", { GetCommand.info }), ("rm", { RemoveCommand.info }), ("ls", { ListCommand.info }),
        ("uuid", { UUIDCommand.info }), ("groups", { GroupListCommand.aliasInfo }), ("group", { GroupCommand.info }),
        ("check", { CheckCommand.info }), ("completion", { CompletionCommand.info }),
        ("passwd", { PasswdCommand.info }),
        ("unlock", { UnlockCommand.info }), ("lock", { LockCommand.info }), ("export", { ExportCommand.info }),
        ("import", { ImportCommand.info }), ("rekey", { RekeyCommand.info }), ("upgrade", { UpgradeCommand.info }),
        ("run", { RunCommand.info }), ("inject", { InjectCommand.info }),
        ("history", { HistoryCommand.info }), ("restore", { RestoreCommand.info }),
        ("config", { ConfigCommand.info }),
        ("help", { HelpCommand.info }),
    ]

    /// Every command, in the order of `vault --help`.
    static var commands: [CommandInfo] { declarations.map { $0.info() } }

    static func info(_ name: String) -> CommandInfo? { declarations.first { $0.name == name }?.info() }

    /// The command or subcommand that a help topic names: "get", or "group create".
    static func info(topic: String) -> CommandInfo? {
        let words = topic.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard let command = info(words[0]) else { return nil }
        switch words.count {
        case 1: return command
        case 2: return command.subcommand(words[1])
        default: return nil
        }
    }

    /// The options that only the tool takes, before a command.
    static let toolOnlySpecs: [OptionSpec] = [.flag("version", "print the version and exit")]

    static let toolSpecs = GlobalOptions.specs + toolOnlySpecs

    /// Parses `arguments` (without the program name).
    package static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        var global = GlobalOptions()
        let (before, rest) = try ParsedArguments.parse(
            arguments[...], specs: toolSpecs, command: nil, stopAtOperand: true)
        try global.take(before)
        if before.flag("help") { return Invocation(global: global, command: .help(topic: nil)) }
        if before.flag("version") { return Invocation(global: global, command: .version) }
        guard let name = rest.first else { throw UsageError("no command given") }
        guard var command = info(name) else { throw UsageError(HashiCorpHints.unknownCommand(name)) }
        var topic = name
        var arguments = rest.dropFirst()
        if !command.subcommands.isEmpty {
            // Only global options stand between a command and its subcommand.
            let (before, after) = try ParsedArguments.parse(
                arguments, specs: GlobalOptions.specs, command: name, stopAtOperand: true)
            try global.take(before)
            if before.flag("help") { return Invocation(global: global, command: .help(topic: name)) }
            guard let word = after.first else {
                throw CommandInfo.missingSubcommand(name, command.subcommands)
            }
            guard let subcommand = command.subcommand(word) else {
                let known = command.subcommands.map(\.name).joined(separator: ", ")
                throw UsageError("unknown subcommand '\(word)'; the subcommands are \(known)", command: name)
            }
            command = subcommand
            topic = name + " " + word
            arguments = after.dropFirst()
        }
        var (parsed, commandLine) = try ParsedArguments.parse(
            arguments, specs: command.options + GlobalOptions.specs, command: topic,
            stopAtOperand: command.takesCommandLine)
        parsed.operands += commandLine
        try global.take(parsed)
        if parsed.flag("help") { return Invocation(global: global, command: .help(topic: topic)) }
        return Invocation(global: global, command: try command.make(parsed))
    }
}

extension ParsedArguments {
    /// The operands, checked to be between `minimum` and `maximum` in number; `names` name them in the
    /// error (e.g. ["SERVICE", "ACCOUNT"]).
    func operands(_ names: [String], minimum: Int, command: String) throws(UsageError) -> [String] {
        if operands.count < minimum {
            throw UsageError("missing operand \(names[operands.count])", command: command)
        }
        if operands.count > names.count {
            let extra = operands[names.count]
            throw UsageError("unexpected operand '\(extra)'", command: command)
        }
        return operands
    }
}
