/// What a value on the command line is, an option's or an operand's: what shell completion offers for
/// it and what a manual page can say about it.
package enum ValueKind: Sendable, Hashable {
    /// Free text, or a number: nothing to offer.
    case text
    /// A file path.
    case file
    /// A directory path.
    case directory
    /// One of these words.
    case choice([String])
    /// The service of a generic password in the vault (completion asks `vault ls`).
    case service
    /// The name of a command of the tool.
    case command
}

/// An operand of a command: its name in the synopsis and what it is.
package struct OperandSpec: Sendable, Hashable {
    /// The name, as in the synopsis (e.g. "SERVICE").
    package let name: String
    /// What it is.
    package let kind: ValueKind

    /// An operand.
    package init(_ name: String, _ kind: ValueKind = .text) {
        self.name = name
        self.kind = kind
    }
}

/// One command, as its help, the shell completions and a manual page describe it.
package struct CommandDescription: Sendable, Hashable {
    /// The name, e.g. "get".
    package let name: String
    /// The forms of its command line, one per line (e.g. "vault get [options] SERVICE [ACCOUNT]").
    package let synopsis: [String]
    /// One line, lower case, no final period (as in `vault --help`).
    package let summary: String
    /// The paragraph of `vault COMMAND --help`, hard-wrapped.
    package let details: String
    /// Its own options, without the global ones.
    package let options: [OptionSpec]
    /// Its operands, in order; the optional ones are marked so in `synopsis`.
    package let operands: [OperandSpec]
    /// Its subcommands (`vault group create`), each described like a command; empty for most. A
    /// command with subcommands has no options or operands of its own.
    package let subcommands: [CommandDescription]

    /// The subcommand named `name`.
    package func subcommand(_ name: String) -> CommandDescription? { subcommands.first { $0.name == name } }
}

/// An exit status of the tool and what it means.
package struct ExitStatusDescription: Sendable, Hashable {
    /// The status.
    package let code: ExitCode
    /// What it means, one line.
    package let meaning: String
}

/// The whole command line of the tool: every command, the global options and the exit statuses. It is
/// what `vault --help`, `vault COMMAND --help` and `vault completion SHELL` are made from, and what a
/// manual page generator reads.
package struct CommandTable: Sendable, Hashable {
    /// Every command, in the order of `vault --help`.
    package let commands: [CommandDescription]
    /// The options that every command accepts, before or after its name.
    package let globalOptions: [OptionSpec]
    /// The options that stand only before a command (`--version`).
    package let toolOptions: [OptionSpec]
    /// Every exit status, in order.
    package let exitStatuses: [ExitStatusDescription]

    /// The command named `name`.
    package func command(_ name: String) -> CommandDescription? { commands.first { $0.name == name } }

    /// The global options that choose the vault or the client (all that take a value but
    /// `--passphrase-fd`): a completion that runs `vault ls` passes on those of the line being completed.
    var scopeOptions: [OptionSpec] { globalOptions.filter { $0.takesValue && $0.name != "passphrase-fd" } }

    /// Every command, and after each its subcommands, with the words that name it on a command line
    /// ("get", "group", "group create"): what the completions tell apart.
    var commandLines: [(words: String, command: CommandDescription)] {
        commands.flatMap { command in
            [(command.name, command)] + command.subcommands.map { (command.name + " " + $0.name, $0) }
        }
    }
}

extension ArgumentParser {
    /// The tool's command table.
    package static var commandTable: CommandTable {
        CommandTable(
            commands: commands.map(\.description), globalOptions: GlobalOptions.specs, toolOptions: toolOnlySpecs,
            exitStatuses: ExitCode.allCases.map { ExitStatusDescription(code: $0, meaning: $0.meaning) })
    }
}

extension CommandInfo {
    /// The public part of the declaration.
    var description: CommandDescription {
        let forms = synopsis.split(separator: "\n").map { $0.drop { $0 == " " } }.map(String.init)
        return CommandDescription(
            name: name, synopsis: forms, summary: summary, details: details, options: options, operands: operands,
            subcommands: subcommands.map(\.description))
    }
}

extension ExitCode {
    /// The line of `vault --help` for this status.
    var meaning: String {
        switch self {
        case .success: return "success"
        case .notFound: return "item not found"
        case .usage: return "usage error (bad option, operand or input)"
        case .duplicate: return "the item, group or vault already exists"
        case .accessDenied:
            return "access denied (missing entitlement, file permissions, unsafe file mode or owner, wrong passphrase "
                + "or key)"
        case .locked: return "the vault is locked"
        case .integrity: return "integrity error (a damaged or tampered file)"
        case .io: return "input/output error"
        case .noVault: return "no vault at the path (create one with `vault init`)"
        case .notAvailable:
            return "not available (a fleet group's etcd cannot be reached or has no quorum; nothing was changed)"
        case .stale: return "with --report-stale: answered from a fleet group's cache, etcd out of reach"
        }
    }
}
