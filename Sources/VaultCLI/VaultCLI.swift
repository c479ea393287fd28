import FoundationEssentials
import Vault
import VaultSystem

/// The `vault` command-line tool as a library: the executable is a thin `@main` over `run`.
package enum VaultCLI {
    /// The tool's version.
    package static let version = "0.1.0"

    /// Runs the tool with `arguments` (the first is the program name) on the process's standard
    /// streams and environment; returns the exit status.
    /// Under the name `git-credential-vault` (or `docker-credential-vault`) it is that credential
    /// helper instead. `fleet` reaches fleet groups (`vault-fleet` gives etcd's); without it a command
    /// that needs one is handed to `vault-fleet`.
    package static func run(_ arguments: [String], fleet: FleetClient? = nil) -> Int32 {
        let program = arguments.first.map { String($0.split(separator: "/").last ?? "") } ?? ""
        let environment = ProcessIdentity.environmentVariables()
        if let helper = CredentialHelpers.named(program) {
            return CredentialHelpers.run(
                helper, Array(arguments.dropFirst()), environment: environment, input: .standardInput,
                output: .standardOutput, errors: .standardError, fleet: fleet)
        }
        return run(
            Array(arguments.dropFirst()), environment: environment, input: .standardInput, output: .standardOutput,
            errors: .standardError, programArguments: arguments, fleet: fleet)
    }

    /// Reports that an argument of the command line is not valid UTF-8 (a usage error): names are
    /// UTF-8, and repairing bad bytes would make two different byte strings address one item. The
    /// argument is shown with its bytes outside printable ASCII as \xHH, and counted as the shell does
    /// (1 is the first after the program's name).
    package static func refuseInvalidArgument(_ invalid: ProcessIdentity.InvalidArgument) -> Int32 {
        var shown = ""
        for byte in invalid.bytes {
            if (0x20..<0x7F).contains(byte), byte != UInt8(ascii: "\\"), byte != UInt8(ascii: "\"") {
                shown.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                shown += "\\x" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        if invalid.bytes.count == ProcessIdentity.InvalidArgument.keptByteCount { shown += "…" }
        let message =
            "vault: argument \(invalid.index) (\"\(shown)\") is not valid UTF-8; names must be UTF-8 "
            + "(see 'vault --help')\n"
        try? FileDescriptor.standardError.writeAll(Array(message.utf8))
        return ExitCode.usage.rawValue
    }

    /// Runs the tool with `arguments` (without the program name) on the given streams.
    static func run(
        _ arguments: [String], environment: [String: String], input: FileDescriptor, output: FileDescriptor,
        errors: FileDescriptor, programArguments: [String]? = nil, fleet: FleetClient? = nil
    ) -> Int32 {
        let invocation: Invocation
        do {
            invocation = try ArgumentParser.parse(arguments)
        } catch {
            // Operands and option names are echoed in the message: the line escapes them.
            try? errors.writeAll(Array(CLIError(.usage, nil, "\(error)").line.utf8))
            return ExitCode.usage.rawValue
        }
        var context = Context(
            global: invocation.global, environment: environment, input: input, output: output, errors: errors,
            fleet: fleet)
        // Fleet groups need an etcd client, which this static executable has not: `vault-fleet` does the
        // command, before anything is read or opened here.
        if let programArguments, let status = FleetHandoff.handOff(invocation.command, programArguments, in: context) {
            return status
        }
        do {
            if let owner = try VaultOwner.actAsOwner(for: invocation.command, in: context) {
                var global = invocation.global
                global.vaultPath = owner.vaultPath
                context = Context(
                    global: global, environment: environment, input: input, output: output, errors: errors,
                    preloadedKey: owner.key, rootOpened: owner.files, fleet: fleet)
            }
            return try execute(invocation.command, in: context)
        } catch {
            if !error.reported { context.writeError(error) }
            return error.code.rawValue
        }
    }

    /// Runs `command`; returns the exit status: success, or for `vault run` the program's.
    static func execute(_ command: Command, in context: Context) throws(CLIError) -> Int32 {
        switch command {
        case .help(let topic):
            if let topic, let info = ArgumentParser.info(topic: topic) {
                try context.write(Help.command(info))
            } else {
                try context.write(Help.tool + "\n")
            }
        case .manualPages(let directory): try ManualPages.write(into: directory)
        case .version:
            // HashiCorp's Vault CLI is also called `vault`: say which tool this is.
            try context.write("vault \(version) (the keychain for Linux; not HashiCorp Vault)\n")
        case .initialize(let command): try command.run(in: context)
        case .put(let command): try command.run(in: context)
        case .get(let command): try command.run(in: context)
        case .remove(let command): try command.run(in: context)
        case .list(let command): try command.run(in: context)
        case .uuid(let command): try command.run(in: context)
        case .upgrade(let command): try command.run(in: context)
        case .groupCreate(let command): try command.run(in: context)
        case .groupList(let command): try command.run(in: context)
        case .groupRemove(let command): try command.run(in: context)
        case .groupRotate(let command): try command.run(in: context)
        case .groupRemoveMember(let command): try command.run(in: context)
        case .groupExportKey(let command): try command.run(in: context)
        case .groupJoin(let command): try command.run(in: context)
        case .groupResync(let command): try command.run(in: context)
        case .groupRevoke(let command): try command.run(in: context)
        case .groupMachines(let command): try command.run(in: context)
        case .check(let command): try command.run(in: context)
        case .completion(let command): try command.run(in: context)
        case .passwd(let command): try command.run(in: context)
        case .unlock(let command): try command.run(in: context)
        case .lock(let command): try command.run(in: context)
        case .export(let command): try command.run(in: context)
        case .importBackup(let command): try command.run(in: context)
        case .rekey(let command): try command.run(in: context)
        case .run(let command): return try command.run(in: context)
        case .inject(let command): try command.run(in: context)
        case .history(let command): try command.run(in: context)
        case .restore(let command): try command.run(in: context)
        case .config(let command): try command.run(in: context)
        }
        return ExitCode.success.rawValue
    }
}
