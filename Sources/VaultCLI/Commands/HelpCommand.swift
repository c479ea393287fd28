/// `vault help [COMMAND]`: the tool's help, or one command's. It runs as `Command.help`; this is its
/// entry in the command table, so that help, completions and manual pages know it like any command.
enum HelpCommand {
    static let info = CommandInfo(
        name: "help",
        synopsis: "vault help [COMMAND [SUBCOMMAND]]",
        summary: "show the help of the tool or of a command",
        details: """
            Prints the tool's help (commands, global options, exit statuses), or with COMMAND that
            command's (with SUBCOMMAND, that subcommand's: `vault help group create`), as `vault --help`
            and `vault COMMAND --help` do. With --man DIR, writes the manual
            pages made from the same table into DIR instead: vault.1 and vault-COMMAND.1 (scripts/install
            puts them in share/man/man1).
            """,
        options: [.value("man", "DIR", "write the manual pages (vault.1, vault-COMMAND.1) into DIR", kind: .directory)],
        operands: [OperandSpec("COMMAND", .command)],
        make: { parsed throws(UsageError) in
            if let directory = parsed.value("man") {
                guard parsed.operands.isEmpty else { throw UsageError("help --man takes no command name") }
                return .manualPages(directory: directory)
            }
            let operands = parsed.operands
            // A command with subcommands takes one of them after it: `vault help group create`.
            let hasSubcommands = operands.first.flatMap { ArgumentParser.info($0) }?.subcommands.isEmpty == false
            guard operands.count <= 1 || (operands.count == 2 && hasSubcommands) else {
                throw UsageError(
                    hasSubcommands
                        ? "help takes a command and at most one of its subcommands"
                        : "help takes at most one command name")
            }
            guard let topic = operands.first else { return .help(topic: nil) }
            guard let command = ArgumentParser.info(topic) else { throw UsageError("unknown command '\(topic)'") }
            guard operands.count == 2 else { return .help(topic: topic) }
            guard command.subcommand(operands[1]) != nil else {
                let known = command.subcommands.map(\.name).joined(separator: ", ")
                throw UsageError("unknown subcommand '\(operands[1])' of \(topic); the subcommands are \(known)")
            }
            return .help(topic: topic + " " + operands[1])
        })
}
