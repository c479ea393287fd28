/// The help texts: the tool's, and each command's from its `CommandInfo`.
enum Help {
    /// `vault --help`.
    static var tool: String {
        let width = ArgumentParser.commands.map(\.name.count).max() ?? 0
        let commands = ArgumentParser.commands.map {
            "  " + $0.name + String(repeating: " ", count: width - $0.name.count + 2) + $0.summary
        }.joined(separator: "\n")
        return """
            usage: vault [--vault DIR] [--app ID] [--group G] COMMAND [options] [operands]
                   vault --help | --version | COMMAND --help

            An encrypted keychain for Linux services: put, get and remove secrets.

            commands:
            \(commands)

            global options (before or after the command):
            \(options(GlobalOptions.specs + [.flag("version", "print the version and exit")]))

            The client (whose access groups a command uses) is --app and --group when given, else
            VAULT_ENTITLEMENTS (a JSON entitlements file), VAULT_APP_ID and VAULT_ACCESS_GROUPS, else the
            application identifier "vault". Secrets never go in arguments or the environment: put reads
            standard input, or prompts on a terminal.

            exit status:
              0  success
              1  item not found
              2  usage error (bad option, operand or input)
              3  the item or vault already exists
              4  access denied (missing entitlement, file permissions, unsafe file mode or owner)
              5  the vault is locked
              6  integrity error (a damaged or tampered file)
              7  input/output error
              8  no vault at the path (create one with `vault init`)

            Errors are one line on standard error: `vault: <what>: <why>`. In errors, tables and
            tab-separated lines, control characters of names are escaped: \\\\, \\t, \\n, \\r, \\xHH (C0,
            DEL), \\u{H...} (C1, bidirectional controls).
            """
    }

    /// `vault COMMAND --help`.
    static func command(_ info: CommandInfo) -> String {
        var text = "usage: \(info.synopsis)\n\n\(info.summary.prefix(1).uppercased() + info.summary.dropFirst()).\n\n"
        text += info.details + "\n"
        if !info.options.isEmpty { text += "\noptions:\n" + options(info.options) + "\n" }
        text += "\nglobal options:\n" + options(GlobalOptions.specs) + "\n"
        return text
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
