/// `vault help [COMMAND]`: the tool's help, or one command's. It runs as `Command.help`; this is its
/// entry in the command table, so that help, completions and manual pages know it like any command.
enum HelpCommand {
    static let info = CommandInfo(
        name: "help",
        synopsis: "vault help [COMMAND]",
        summary: "show the help of the tool or of a command",
        details: """
            Prints the tool's help (commands, global options, exit statuses), or with COMMAND that
            command's, as `vault --help` and `vault COMMAND --help` do. With --man DIR, writes the manual
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
            guard parsed.operands.count <= 1 else { throw UsageError("help takes at most one command name") }
            let topic = parsed.operands.first
            if let topic, ArgumentParser.info(topic) == nil { throw UsageError("unknown command '\(topic)'") }
            return .help(topic: topic)
        })
}
