/// The help texts, made from the command table: the tool's, and each command's.
enum Help {
    /// The widest line of a help text.
    static let width = 100

    /// `text` with each line longer than `width` broken at spaces, the rest indented as far as the
    /// line's description column (after the first gap of two spaces, in an aligned table line) or its
    /// own indentation (in prose).
    static func wrapped(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard line.count > width else { return String(line) }
            let characters = Array(line)
            let leading = characters.prefix { $0 == " " }.count
            var hanging = leading
            if let gap = (leading..<characters.count - 1).first(where: {
                characters[$0] == " " && characters[$0 + 1] == " " && $0 > leading
            }) {
                hanging = characters[gap...].firstIndex { $0 != " " } ?? leading
            }
            if hanging > width / 2 { hanging = leading }
            var lines: [String] = []
            var rest = characters
            var indent = 0
            while rest.count + indent > width {
                let limit = width - indent
                guard let space = rest[..<limit].lastIndex(of: " "), space > hanging - indent else { break }
                lines.append(String(repeating: " ", count: indent) + String(rest[..<space]))
                rest = Array(rest[(space + 1)...].drop { $0 == " " })
                indent = hanging
            }
            lines.append(String(repeating: " ", count: indent) + String(rest))
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// `vault --help`.
    static var tool: String { wrapped(toolText) }

    private static var toolText: String {
        let table = ArgumentParser.commandTable
        let width = table.commands.map(\.name.count).max() ?? 0
        let commands = table.commands.map {
            "  " + $0.name + String(repeating: " ", count: width - $0.name.count + 2) + $0.summary
        }.joined(separator: "\n")
        let statuses = table.exitStatuses.map { "  \($0.code.rawValue)  \($0.meaning)" }.joined(separator: "\n")
        return """
            usage: vault [--vault DIR] [--app ID] [--group G] COMMAND [options] [operands]
                   vault --help | --version | COMMAND --help

            An encrypted keychain for Linux services: put, get and remove secrets.

            commands:
            \(commands)

            global options (before or after the command):
            \(options(table.globalOptions + table.toolOptions))

            The client (whose access groups a command uses) is --app and --group when given, else
            VAULT_ENTITLEMENTS (a JSON entitlements file), VAULT_APP_ID and VAULT_ACCESS_GROUPS, else the
            application identifier "vault". Secrets never go in arguments or the environment: put reads
            standard input, or prompts on a terminal.

            exit status:
            \(statuses)

            The same binary is also a credential helper when run under these names (scripts/install
            makes the links): git-credential-vault for git (git config --global credential.helper vault)
            and docker-credential-vault for docker, podman and skopeo ("credsStore": "vault"). Python's
            keyring uses the vault through python/keyring-vault. Not HashiCorp Vault (see --version).

            Errors are one line on standard error: `vault: <what>: <why>`. In errors, tables and
            tab-separated lines, control characters of names are escaped: \\\\, \\t, \\n, \\r, \\xHH (C0,
            DEL), \\u{H...} (C1, bidirectional controls).
            """
    }

    /// `vault COMMAND --help`.
    static func command(_ info: CommandInfo) -> String {
        wrapped(commandText(info))
    }

    private static func commandText(_ info: CommandInfo) -> String {
        var text = "usage: \(info.synopsis)\n\n\(info.summary.prefix(1).uppercased() + info.summary.dropFirst()).\n\n"
        text += info.details + "\n"
        if !info.subcommands.isEmpty { text += "\nsubcommands:\n" + subcommands(info) + "\n" }
        if !info.options.isEmpty { text += "\noptions:\n" + options(info.options) + "\n" }
        text += "\nglobal options:\n" + options(GlobalOptions.specs) + "\n"
        return text
    }

    /// The subcommand lines of a command that has them, aligned, each pointing to its own help.
    static func subcommands(_ info: CommandInfo) -> String {
        let width = info.subcommands.map(\.name.count).max() ?? 0
        return info.subcommands.map {
            "  " + $0.name + String(repeating: " ", count: width - $0.name.count + 2) + $0.summary
        }.joined(separator: "\n") + "\n(`vault \(info.name) SUBCOMMAND --help` for each)"
    }

    /// Option lines, aligned.
    static func options(_ specs: [OptionSpec]) -> String {
        let heads = specs.map { spec in
            (spec.short.map { "-\($0), " } ?? "") + "--\(spec.name)" + (spec.valueName.map { " \($0)" } ?? "")
        }
        let width = heads.map(\.count).max() ?? 0
        return zip(heads, specs).map { head, spec in
            "  " + head + String(repeating: " ", count: width - head.count + 2) + spec.help
        }.joined(separator: "\n")
    }
}
