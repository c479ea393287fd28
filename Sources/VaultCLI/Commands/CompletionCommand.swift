/// `vault completion bash|zsh|fish`: prints the shell's completion script, generated from the command
/// table (`ArgumentParser.commandTable`), so that it always knows every command and option of this
/// build.
package struct CompletionCommand: Sendable, Hashable {
    /// A shell with a completion script.
    package enum Shell: String, Sendable, Hashable, CaseIterable {
        /// bash, with or without the bash-completion package.
        case bash
        /// zsh's completion system (compsys).
        case zsh
        /// fish.
        case fish
    }

    /// The shell.
    package var shell: Shell

    static let info = CommandInfo(
        name: "completion",
        synopsis: "vault completion bash|zsh|fish",
        summary: "print the shell completion script",
        details: """
            Prints a completion script for bash, zsh or fish: commands, options, option values and
            service names (from `vault ls` with the line's --vault, --app, --group and --key-file; it never
            asks for a passphrase, so a locked vault offers none). Load it in the running shell with
              source <(vault completion bash)          (zsh: after compinit)
            or install it:
              vault completion bash > /usr/share/bash-completion/completions/vault
              vault completion zsh > /usr/local/share/zsh/site-functions/_vault   (any directory of $fpath)
              vault completion fish > ~/.config/fish/completions/vault.fish
            """,
        options: [],
        operands: [OperandSpec("SHELL", .choice(Shell.allCases.map(\.rawValue)))],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["SHELL"], minimum: 1, command: "completion")
            guard let shell = Shell(rawValue: operands[0]) else {
                let known = Shell.allCases.map(\.rawValue).joined(separator: ", ")
                throw UsageError(
                    "no completion for shell '\(operands[0])'; the shells are \(known)", command: "completion")
            }
            return .completion(CompletionCommand(shell: shell))
        })

    func run(in context: Context) throws(CLIError) {
        try context.write(Self.script(for: shell))
    }

    /// The script for `shell`.
    static func script(for shell: Shell) -> String {
        let table = ArgumentParser.commandTable
        switch shell {
        case .bash: return BashCompletion.script(table)
        case .zsh: return ZshCompletion.script(table)
        case .fish: return FishCompletion.script(table)
        }
    }
}
