import Vault
import VaultCrypto
import VaultSystem

/// `vault run`: starts a program with secrets from the vault, delivered as systemd delivers
/// credentials (files in `$CREDENTIALS_DIRECTORY`) or, when asked for, in its environment.
package struct RunCommand: Sendable, Hashable {
    /// A secret for the program: the name it gets it under, and which secret.
    package struct Delivery: Sendable, Hashable {
        /// The file name in `$CREDENTIALS_DIRECTORY`, or the environment variable.
        package var name: String
        /// The secret (`[@GROUP/]SERVICE[/ACCOUNT]`), parsed once, on the command line.
        package var reference: SecretReference
    }

    /// `--secret NAME=SECRET`: files.
    package var files: [Delivery]
    /// `--env NAME=SECRET`: environment variables.
    package var variables: [Delivery]
    /// The program and its arguments.
    package var command: [String]

    static let info = CommandInfo(
        name: "run",
        synopsis: "vault run [--secret NAME=SECRET]... [--env NAME=SECRET]... [--] COMMAND [ARG]...",
        summary: "run a program with secrets from the vault",
        details: """
            Starts COMMAND with the secrets it is given, the way systemd gives a service its credentials:
            each --secret NAME=SECRET is a file NAME (mode 0400) in a private directory (0500, on a memory
            file system: $RUNTIME_DIRECTORY, $XDG_RUNTIME_DIR or /dev/shm), named in $CREDENTIALS_DIRECTORY,
            so a program written for systemd's LoadCredential= works unchanged. SECRET is SERVICE,
            SERVICE/ACCOUNT, or either after @GROUP/ to read it from that access group (a backslash takes
            the next character as it is: \\/ for a / in a service). Every secret is read before COMMAND
            starts: a missing or locked one stops here with the usual exit status, and nothing is run.

            --env NAME=SECRET puts the secret in the environment variable NAME instead, for programs that
            read only their environment. That exposes it more: every process the program starts inherits
            it, /proc/PID/environ shows it to the same user and to root, and crash reports and debug
            pages often print the environment. Prefer --secret where the program can read a file.

            vault waits for COMMAND and exits with its exit status (128 + N when signal N ended it; 127
            when it cannot be found, 126 when it cannot be started). Signals sent to vault (TERM, INT,
            HUP, QUIT, USR1, USR2, WINCH, ALRM) are passed on to COMMAND; those the terminal sends reach
            both directly, and so does a signal sent to the whole process group or a service's cgroup (use
            systemd's KillMode=mixed to signal vault alone). When COMMAND ends, the directory is removed;
            if vault itself is killed, even with SIGKILL, a process it left for the purpose removes it at
            once, so no secret stays readable behind it (in a service, RuntimeDirectory= covers the
            remover being killed too). Options after COMMAND are COMMAND's. Root running this on a vault of
            another user acts as that user, as for every command: COMMAND then runs as the vault's owner.
            """,
        options: [
            .value("secret", "NAME=SECRET", "give the secret as the file NAME in $CREDENTIALS_DIRECTORY"),
            .value("env", "NAME=SECRET", "give the secret in the environment variable NAME (see above)"),
        ],
        operands: [OperandSpec("COMMAND"), OperandSpec("ARG")],
        takesCommandLine: true,
        make: { parsed throws(UsageError) in
            var files: [Delivery] = []
            var variables: [Delivery] = []
            for (option, value) in parsed.options where option == "secret" || option == "env" {
                guard let equals = value.firstIndex(of: "="), equals != value.startIndex,
                    value.index(after: equals) != value.endIndex
                else {
                    throw UsageError("--\(option) needs NAME=SECRET, not \"\(value)\"", command: "run")
                }
                let delivery = Delivery(
                    name: String(value[..<equals]),
                    reference: try SecretReference(String(value[value.index(after: equals)...])))
                if option == "secret" {
                    try checkFileName(delivery.name)
                    guard !files.contains(where: { $0.name == delivery.name }) else {
                        throw UsageError("--secret \(delivery.name) is given twice", command: "run")
                    }
                    files.append(delivery)
                } else {
                    try checkVariableName(delivery.name)
                    guard !variables.contains(where: { $0.name == delivery.name }) else {
                        throw UsageError("--env \(delivery.name) is given twice", command: "run")
                    }
                    guard delivery.name != "CREDENTIALS_DIRECTORY" else {
                        throw UsageError(
                            "--env CREDENTIALS_DIRECTORY=…: that variable names the directory of --secret's files",
                            command: "run")
                    }
                    variables.append(delivery)
                }
            }
            guard !parsed.operands.isEmpty else {
                throw UsageError("missing COMMAND (vault run [--secret NAME=SECRET]... -- COMMAND)", command: "run")
            }
            return .run(RunCommand(files: files, variables: variables, command: parsed.operands))
        })

    /// A file name systemd would take for a credential: no `/`, not `.` or `..`, at most 255 bytes.
    static func checkFileName(_ name: String) throws(UsageError) {
        guard !name.contains("/"), name != ".", name != "..", name.utf8.count <= 255 else {
            throw UsageError(
                "--secret \(name)=…: NAME is a file name: no /, not . or .., at most 255 bytes", command: "run")
        }
    }

    /// An environment variable's name as a shell writes it: a letter or `_`, then letters, digits, `_`.
    static func checkVariableName(_ name: String) throws(UsageError) {
        let valid = name.utf8.enumerated().allSatisfy { offset, byte in
            let letter = (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == UInt8(ascii: "_")
            return letter || (offset > 0 && (0x30...0x39).contains(byte))
        }
        guard valid else {
            throw UsageError(
                "--env \(name)=…: NAME must be an environment variable's name (letters, digits and _, not "
                    + "starting with a digit)", command: "run")
        }
    }

    /// Runs the command; returns its exit status.
    func run(in context: Context) throws(CLIError) -> Int32 {
        guard let program = ChildProcess.executablePath(for: command[0], searchPath: context.environment["PATH"])
        else {
            context.writeError("vault: run: \(command[0]): command not found\n")
            return 127
        }
        // The directory, and so its remover (a fork of this process), before any secret is in memory: the
        // remover would keep a copy of every page it inherited.
        var directory: CredentialDirectory?
        defer { directory?.remove() }
        if !files.isEmpty { directory = try Self.makeDirectory(in: context) }
        var fileSecrets = try read(files, in: context)
        defer { for index in fileSecrets.indices { fileSecrets[index].wipe() } }
        var variableSecrets = try read(variables, in: context)
        defer { for index in variableSecrets.indices { variableSecrets[index].wipe() } }
        for (variable, secret) in zip(variables, variableSecrets) where secret.contains(0) {
            throw CLIError(
                .usage, "--env \(variable.name)",
                "the secret \"\(variable.reference.text)\" holds a NUL byte, which an environment variable cannot; "
                    + "give it with --secret as a file")
        }
        var replaced = Set(variables.map(\.name))
        if !files.isEmpty { replaced.insert("CREDENTIALS_DIRECTORY") }
        var environment = ChildProcess.inheritedEnvironment(removing: replaced)
        if let made = directory {
            for (file, secret) in zip(files, fileSecrets) {
                do {
                    try made.write(file.name, contents: secret)
                } catch {
                    throw CLIError(.io, made.path + "/" + file.name, "cannot write the secret's file: \(error)")
                }
            }
            do { try made.seal() } catch { throw CLIError(.io, made.path, "cannot make it read-only: \(error)") }
            environment.append(Array(("CREDENTIALS_DIRECTORY=" + made.path).utf8))
        }
        for index in fileSecrets.indices { fileSecrets[index].wipe() }
        for (variable, secret) in zip(variables, variableSecrets) {
            environment.append(Array((variable.name + "=").utf8) + secret)
        }
        for index in variableSecrets.indices { variableSecrets[index].wipe() }
        do {
            return try ChildProcess.runForwardingSignals(program, arguments: command, environment: &environment)
                .shellStatus
        } catch {
            context.writeError("vault: run: \(program): cannot be started: \(error)\n")
            return error.errno == .noSuchFileOrDirectory ? 127 : 126
        }
    }

    /// The secrets of `deliveries`, in order, read before anything is started.
    private func read(_ deliveries: [Delivery], in context: Context) throws(CLIError) -> [[UInt8]] {
        guard !deliveries.isEmpty else { return [] }
        let references = deliveries.map(\.reference)
        let vault = try context.openVault(includingGroups: references.compactMap(\.group))
        var secrets: [[UInt8]] = []
        do throws(CLIError) {
            for reference in references {
                secrets.append(try reference.read(from: vault, in: context))
            }
        } catch {
            for index in secrets.indices { secrets[index].wipe() }
            throw error
        }
        return secrets
    }

    /// A new private directory on a memory file system: in `$RUNTIME_DIRECTORY` (a service's
    /// `RuntimeDirectory=`, which systemd removes when the service stops, even after a SIGKILL of every
    /// process of it), else `$XDG_RUNTIME_DIR` (the user's own, a tmpfs under systemd), else `/dev/shm`.
    static func makeDirectory(in context: Context) throws(CLIError) -> CredentialDirectory {
        var parents: [String] = []
        if let service = context.environment["RUNTIME_DIRECTORY"]?.split(separator: ":").first, service.hasPrefix("/") {
            parents.append(String(service))
        }
        if let runtime = context.environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { parents.append(runtime) }
        parents.append("/dev/shm")
        var failures: [String] = []
        for parent in parents {
            do {
                return try CredentialDirectory(inParent: parent)
            } catch  where error.errno == .notSupported {
                failures.append("\(parent) is not on a memory file system (tmpfs)")
            } catch {
                failures.append("\(parent): \(error.systemCall.rawValue) failed: \(error)")
            }
        }
        throw CLIError(
            .io, nil,
            "cannot make a private directory for the secrets: " + failures.joined(separator: "; ")
                + " (set XDG_RUNTIME_DIR to a directory of yours on tmpfs)")
    }
}
