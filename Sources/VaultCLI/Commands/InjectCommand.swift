import Vault
import VaultCrypto
import VaultSystem

/// `vault inject`: renders a configuration file from a template whose placeholders name secrets.
package struct InjectCommand: Sendable, Hashable {
    /// The template's path, or "-" for standard input.
    package var template: String
    /// Where the rendered file goes; nil (or "-") is standard output.
    package var output: String?

    /// The largest template read.
    static let templateLimit = 16 << 20

    static let info = CommandInfo(
        name: "inject",
        synopsis: "vault inject TEMPLATE [OUTPUT]",
        summary: "render a configuration file with secrets from the vault",
        details: """
            Copies TEMPLATE (- for standard input) to OUTPUT, or to standard output, replacing each
            placeholder {{ SECRET }} by that secret's bytes. SECRET is SERVICE, SERVICE/ACCOUNT, or either
            after @GROUP/ to read it from that access group; without a group it is looked for in --group,
            else in every group of the client. Nothing else is evaluated. Inside a placeholder a backslash
            takes the next character as it is, for names that hold / or } (a service "a/b" is {{ a\\/b }});
            \\{{ in the template writes a literal {{.

            Every secret is read before anything is written: a missing or locked one is an error that
            names it and its line, with the usual exit status, and OUTPUT is left as it was. OUTPUT is
            replaced atomically (a new file renamed over it, synced) with mode 0600: readers see the old
            file or the whole new one.
            """,
        options: [],
        operands: [OperandSpec("TEMPLATE", .file), OperandSpec("OUTPUT", .file)],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["TEMPLATE", "OUTPUT"], minimum: 1, command: "inject")
            let output = operands.count > 1 && operands[1] != "-" ? operands[1] : nil
            return .inject(InjectCommand(template: operands[0], output: output))
        })

    func run(in context: Context) throws(CLIError) {
        let source = template == "-" ? "standard input" : template
        let bytes = try readTemplate()
        let template: Template
        do {
            template = try Template(bytes, source: source)
        } catch {
            throw CLIError(.usage, nil, error.message)
        }
        var secrets: [SecretReference: [UInt8]] = [:]
        defer { for index in secrets.values.indices { secrets.values[index].wipe() } }
        let references = template.references
        if !references.isEmpty {
            let vault = try context.openVault(includingGroups: references.compactMap(\.group))
            for reference in references {
                do {
                    secrets[reference] = try reference.read(from: vault, in: context)
                } catch {
                    let line =
                        template.pieces.lazy.compactMap { piece -> Int? in
                            if case .secret(reference, let line) = piece { return line }
                            return nil
                        }.first ?? 0
                    throw CLIError(error.code, error.subject.map { "\(source), line \(line): \($0)" }, error.message)
                }
            }
        }
        var rendered = template.render(secrets)
        defer { rendered.wipe() }
        guard let output else {
            try context.write(bytes: rendered)
            return
        }
        try Self.replace(output, with: rendered)
    }

    /// The groups that the placeholders of the template file at `path` name (`@GROUP/…`); none for
    /// standard input or a template that cannot be read or parsed (the command then says why).
    static func namedGroups(inTemplate path: String) -> [AccessGroup] {
        guard path != "-",
            let file = try? FileDescriptor.currentWorkingDirectory.openForReadingFollowingAt(path)
        else { return [] }
        defer { try? file.close() }
        guard let bytes = try? file.readAll(limit: templateLimit),
            let template = try? Template(bytes, source: path)
        else { return [] }
        return template.references.compactMap(\.group)
    }

    private func readTemplate() throws(CLIError) -> [UInt8] {
        let file: FileDescriptor
        if template == "-" {
            file = .standardInput
        } else {
            do {
                file = try FileDescriptor.currentWorkingDirectory.openForReadingFollowingAt(template)
            } catch {
                throw CLIError(
                    error == .noSuchFileOrDirectory ? .usage : .io, template, "cannot open the template: \(error)")
            }
        }
        defer { if template != "-" { try? file.close() } }
        do {
            return try file.readAll(limit: Self.templateLimit)
        } catch {
            throw CLIError(.io, template == "-" ? "standard input" : template, "cannot read the template: \(error)")
        }
    }

    /// Replaces the file at `path` with `contents` (mode 0600): a new file beside it, synced, renamed
    /// over it, and the directory synced. A failure leaves the old file and no new one.
    static func replace(_ path: String, with contents: [UInt8]) throws(CLIError) {
        let target = FilePath(path)
        let directoryPath = target.parent.string
        let name = target.lastComponent
        guard !name.isEmpty, name != ".", name != ".." else {
            throw CLIError(.usage, path, "OUTPUT must name a file")
        }
        let directory: FileDescriptor
        do {
            directory = try FileDescriptor.currentWorkingDirectory.openDirectoryFollowingAt(directoryPath)
        } catch {
            throw CLIError(.io, directoryPath, "cannot open the output's directory: \(error)")
        }
        defer { try? directory.close() }
        if let status = try? directory.statusAt(name), status.kind == .directory {
            throw CLIError(.usage, path, "is a directory; OUTPUT must name a file")
        }
        var random = SystemRandomNumberGenerator()
        // At most 200 bytes of the name: the whole stays under NAME_MAX (255 bytes).
        let shortName = String(decoding: name.utf8.prefix(200), as: UTF8.self)
        let temporary = "." + shortName + ".vault-inject." + String(random.next() & 0xFFFF_FFFF, radix: 16)
        // Written unnamed where the file system can (a kill while writing leaves nothing), then named.
        let unnamed = try? directory.openUnnamedFile(permissions: .ownerReadWrite)
        let file: FileDescriptor
        do {
            file =
                try unnamed
                ?? directory.openAt(temporary, [.writeOnly, .create, .exclusiveCreate], permissions: .ownerReadWrite)
        } catch {
            throw CLIError(.io, directoryPath + "/" + temporary, "cannot create the new file: \(error)")
        }
        do {
            try file.setPermissions(.ownerReadWrite)
            try file.writeAll(contents)
            try file.sync()
            if unnamed != nil { try directory.link(unnamed: file, as: temporary) }
            try file.close()
        } catch {
            try? file.close()
            try? directory.unlinkAt(temporary)
            throw CLIError(.io, path, "cannot write the new file: \(error); \(path) was left as it was")
        }
        do {
            try directory.renameAt(temporary, to: name)
        } catch {
            try? directory.unlinkAt(temporary)
            throw CLIError(.io, path, "cannot replace it: \(error); it was left as it was")
        }
        do {
            try directory.sync()
        } catch {
            throw CLIError(
                .io, directoryPath, "the new \(name) is in place but its directory could not be synced: \(error)")
        }
    }
}
