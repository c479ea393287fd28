import Vault
import VaultSystem

/// Manual pages (roff, man(7) macros) made from the command table, the one source of `--help` and the
/// completions: `vault.1` for the tool (commands, global options, exit statuses, the credential
/// helpers) and `vault-COMMAND.1` for each command. `vault help --man DIR` writes them.
enum ManualPages {
    /// The pages, by file name.
    static func pages(_ table: CommandTable = ArgumentParser.commandTable) -> [(name: String, text: String)] {
        [("vault.1", tool(table))] + table.commands.map { ("vault-\($0.name).1", command($0)) }
    }

    static func header(_ title: String) -> String {
        ".TH \(title.uppercased()) 1 \"\" \"vault \(VaultCLI.version)\" \"User Commands\"\n"
    }

    static func tool(_ table: CommandTable) -> String {
        var page = header("vault")
        page += ".SH NAME\nvault \\- the keychain for Linux: put, get and remove secrets\n"
        page +=
            ".SH SYNOPSIS\n.B vault\n[\\fIglobal options\\fR] \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIoperands\\fR]\n"
        page += ".br\n.B vault\n\\-\\-help | \\-\\-version | \\fICOMMAND\\fR \\-\\-help\n"
        page +=
            ".SH DESCRIPTION\n"
            + text(
                """
                An encrypted keychain for Linux services, with the Apple keychain's items and access groups:
                secrets are kept in a vault directory, encrypted with libsodium, and every face of it (this
                tool, the Swift API, the Security module, the C API libvault.so) sees the same items. The
                client a command acts as is --app and --group when given, else VAULT_ENTITLEMENTS,
                VAULT_APP_ID and VAULT_ACCESS_GROUPS, else the application identifier "vault". Secrets never
                go in arguments or the environment: put reads standard input, or prompts on a terminal. This
                is not HashiCorp Vault, whose CLI has the same name: vault --version says which one answers.
                """) + "\n"
        page += ".SH COMMANDS\n"
        for command in table.commands {
            page += ".TP\n.B \(roff(command.name))\n\(roff(command.summary)) (see \\fBvault\\-\(command.name)\\fR(1))\n"
        }
        page += ".SH GLOBAL OPTIONS\n" + options(table.globalOptions + table.toolOptions)
        page += ".SH EXIT STATUS\n"
        for status in table.exitStatuses {
            page += ".TP\n.B \(status.code.rawValue)\n\(roff(status.meaning))\n"
        }
        page +=
            ".SH CREDENTIAL HELPERS\n"
            + text(
                """
                Run under the name git-credential-vault, the binary is git's credential helper (git config
                --global credential.helper vault); under docker-credential-vault, a docker credential helper
                ("credsStore": "vault"). Both keep internet passwords in the CLI's client and vault.
                """) + "\n"
        page += ".SH ENVIRONMENT\n"
        for (name, meaning) in [
            ("VAULT_DIR", "the vault directory (default /var/lib/vault for root, else ~/.local/share/vault)"),
            ("VAULT_APP_ID", "the client's application identifier"),
            ("VAULT_ACCESS_GROUPS", "the client's access groups, separated by commas"),
            ("VAULT_ENTITLEMENTS", "a JSON entitlements file naming the identifier and the groups"),
            ("VAULT_KEY_FILE", "an external key file (also $CREDENTIALS_DIRECTORY/vault.key)"),
        ] {
            page += ".TP\n.B \(name)\n\(roff(meaning))\n"
        }
        page += ".SH SEE ALSO\n" + table.commands.map { "\\fBvault\\-\($0.name)\\fR(1)" }.joined(separator: ", ") + "\n"
        return page
    }

    static func command(_ command: CommandDescription) -> String {
        var page = header("vault-" + command.name)
        page += ".SH NAME\nvault\\-\(roff(command.name)) \\- \(roff(command.summary))\n"
        page += ".SH SYNOPSIS\n" + command.synopsis.map { ".nf\n\(roff($0))\n.fi\n" }.joined()
        page += ".SH DESCRIPTION\n" + text(command.details) + "\n"
        if !command.options.isEmpty { page += ".SH OPTIONS\n" + options(command.options) }
        // Subcommands share their command's page, a section each, as git's pages do.
        if !command.subcommands.isEmpty {
            page += ".SH SUBCOMMANDS\n"
            for subcommand in command.subcommands {
                page += ".SS \(roff(subcommand.name))\n"
                page += subcommand.synopsis.map { ".nf\n\(roff($0))\n.fi\n" }.joined()
                page += ".PP\n" + text(subcommand.details) + "\n" + options(subcommand.options)
            }
        }
        page += ".SH SEE ALSO\n\\fBvault\\fR(1)\n"
        return page
    }

    static func options(_ options: [OptionSpec]) -> String {
        options.map { option in
            var head = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
            head += "\\fB\\-\\-\(roff(option.name))\\fR"
            if let value = option.valueName { head += " \\fI\(roff(value))\\fR" }
            return ".TP\n\(head)\n\(roff(option.help))\n"
        }.joined()
    }

    /// A help paragraph as roff text: lines joined (roff fills them), blank lines as paragraph breaks.
    static func text(_ paragraph: String) -> String {
        paragraph.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.allSatisfy(\.isWhitespace) ? ".PP" : roff(String(line.drop(while: { $0 == " " })))
        }.joined(separator: "\n")
    }

    /// `text` safe in a roff line: backslashes and hyphens escaped, a leading `.` or `'` made literal.
    static func roff(_ text: String) -> String {
        var result = ""
        for character in text {
            switch character {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            default: result.append(character)
            }
        }
        if result.hasPrefix(".") || result.hasPrefix("'") { result = "\\&" + result }
        return result
    }

    /// Writes every page into `directory` (which must exist), replacing files of the same names.
    static func write(into directory: String) throws(CLIError) {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(directory)
        } catch {
            throw CLIError(.io, directory, "cannot open the directory for the manual pages: \(error)")
        }
        defer { try? fd.close() }
        for (name, text) in pages() {
            do {
                let file = try fd.openAt(name, [.writeOnly, .create, .truncate], permissions: .init(rawValue: 0o644))
                try file.closeAfter { try file.writeAll(Array(text.utf8)) }
            } catch {
                throw CLIError(.io, directory + "/" + name, "cannot write the manual page: \(error)")
            }
        }
    }
}
