import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

/// `vault put` (add or update) and `vault add` (add only): stores a secret read from standard input,
/// or from a prompt with echo off when standard input is a terminal. No option takes the secret: an
/// argument is visible to every user in /proc/<pid>/cmdline.
package struct PutCommand: Sendable, Hashable {
    /// The item.
    package var name: ItemName
    /// `vault add`: fail on an existing item instead of replacing its secret.
    package var addOnly: Bool
    /// `--trim`: drop one trailing newline from standard input.
    package var trim: Bool
    /// `--label`.
    package var label: String?
    /// `--comment`.
    package var comment: String?
    /// `--if-version N`: store only if the item's current version is N (0: only if there is none).
    package var ifVersion: UInt64? = nil

    /// The largest secret accepted, in bytes: an item record holds at most 16 MiB, and this leaves room
    /// for the attributes.
    static let maximumSecretByteCount = 16_000_000

    static func info(add: Bool) -> CommandInfo {
        let name = add ? "add" : "put"
        return CommandInfo(
            name: name,
            synopsis:
                "vault \(name) [options] SERVICE [ACCOUNT]\n       vault \(name) [options] --server HOST [ACCOUNT]",
            summary: add ? "add a secret; fails when the item exists" : "add or replace a secret",
            details: (add
                ? "Adds a generic password (or with --server an internet password); an existing item is\nexit status 3 and stays unchanged."
                : "Adds a generic password (or with --server an internet password), or replaces the secret of\nthe existing one atomically: readers see the old secret or the new one, never neither. An item\nwhose file fails authentication (damaged; see `vault check`) is replaced too: the damaged file is\nremoved (reported on standard error) and the secret stored as a new item.")
                    + """

                    The secret is every byte of standard input (binary-safe; --trim drops one trailing
                    newline), or, when standard input is a terminal, typed twice at a prompt that does not echo.
                    No option takes the secret itself: arguments are visible to every user of the machine.
                    A missing ACCOUNT is the empty account.
                    """
                + (add
                    ? ""
                    : """

                    Each put keeps the previous secret as a version (`vault history`). With --if-version
                    N, the secret is stored only if the item's current version is still N (0: only if
                    there is no item); if another writer changed it first, nothing is written and the
                    exit status is 3: read it again and retry.
                    """),
            options: [
                .flag("trim", "drop one trailing newline from standard input"),
                .value("label", "TEXT", "the item's label"),
                .value("comment", "TEXT", "the item's comment"),
            ] + (add ? [] : [.value("if-version", "N", "store only if the current version is N (0: no item)")])
                + InternetOptions.specs,
            operands: ItemName.operands,
            make: { parsed throws(UsageError) in
                var command = PutCommand(
                    name: try InternetOptions.itemName(parsed, command: name), addOnly: add,
                    trim: parsed.flag("trim"), label: parsed.value("label"), comment: parsed.value("comment"))
                if let text = parsed.value("if-version") {
                    guard case .generic = command.name, command.label == nil, command.comment == nil else {
                        throw UsageError(
                            "--if-version stores the secret of a generic password (SERVICE [ACCOUNT]) alone: "
                                + "leave out --server, --label and --comment",
                            command: name)
                    }
                    command.ifVersion = try RestoreCommand.versionNumber(
                        text, command: name, option: "--if-version", allowingZero: true)
                }
                return .put(command)
            })
    }

    func run(in context: Context) throws(CLIError) {
        let group = try context.group()
        let vault = try context.openVault(adding: true)
        var secret = try readSecret(context)
        defer { secret.wipe() }
        var attributes = name.attributes
        attributes.label = label
        attributes.comment = comment
        attributes.accessGroup = group
        let subject = name.description
        if let ifVersion, case .generic(let service, let account) = name {
            let key = try context.itemKey(service: service, account: account)
            do {
                _ = try vault.set(secret, for: key, ifVersion: ifVersion)
            } catch  where error.status == .duplicateItem {
                // Not "already exists": the message says which version another writer made current.
                throw CLIError(.duplicate, nil, error.message)
            } catch {
                throw CLIError(error, subject: subject, vaultPath: vault.path)
            }
            return
        }
        if addOnly {
            do {
                _ = try vault.add(name.itemClass, attributes: attributes, data: secret)
            } catch  where error.isMissingGroup {
                throw Self.missingGroup(error)
            } catch {
                throw CLIError(error, subject: subject, vaultPath: vault.path)
            }
            return
        }
        do {
            let removed = try ItemUpsert.store(secret, as: name, group: group, attributes: attributes, in: vault)
            context.listRemoved(removed)
        } catch  where error.isMissingGroup {
            throw Self.missingGroup(error)
        } catch {
            throw CLIError(error, subject: subject, vaultPath: vault.path)
        }
    }

    /// An add to a group the vault does not have, by a process that cannot make it (a member of shared
    /// groups, or no user of the vault at all): where its items can go instead.
    static func missingGroup(_ error: VaultError) -> CLIError {
        // A fleet group removed from the fleet names its own way out.
        if error.message.contains("removed from the fleet") { return CLIError(.notFound, nil, error.message) }
        return CLIError(
            .notFound, nil,
            error.message + "; a member of a shared group adds to it with --group NAME (`vault group ls` lists the "
                + "groups shared with your Unix groups)")
    }

    /// The secret: all of standard input, or typed twice at a prompt without echo on a terminal.
    func readSecret(_ context: Context) throws(CLIError) -> Data {
        let input = context.input
        if input.isTerminal {
            return try prompt(context)
        }
        var bytes: [UInt8]
        do {
            bytes = try input.readAllWiping(limit: Self.maximumSecretByteCount)
        } catch  where error == .fileTooLarge {
            throw CLIError(.usage, "standard input", "the secret is larger than 16 MB (16000000 bytes)")
        } catch {
            throw CLIError(.io, "standard input", "\(error)")
        }
        defer { bytes.wipe() }
        if trim, bytes.last == UInt8(ascii: "\n") { bytes.removeLast() }
        guard !bytes.isEmpty else {
            throw CLIError(.usage, "standard input", "no secret: standard input is empty")
        }
        return Data(bytes)
    }

    func prompt(_ context: Context) throws(CLIError) -> Data {
        func ask(_ question: String) throws(CLIError) -> [UInt8] {
            let line: [UInt8]?
            do {
                // The prompt goes out only once echo is off: turning it off discards type-ahead, so a
                // reply typed after a prompt shown earlier could be lost.
                line = try context.input.withEchoDisabled { () throws(Errno) in
                    context.writeError(question)
                    return try context.input.readLine(limit: Self.maximumSecretByteCount)
                }
            } catch {
                context.writeError("\n")
                throw CLIError(.io, "terminal", "\(error)")
            }
            // The user's Enter was not echoed.
            context.writeError("\n")
            guard let line else { throw CLIError(.usage, "terminal", "no secret: end of input at the prompt") }
            return line
        }
        var first = try ask("Secret for \(name): ")
        defer { first.wipe() }
        guard !first.isEmpty else { throw CLIError(.usage, "terminal", "no secret: the entry was empty") }
        var second = try ask("Again: ")
        defer { second.wipe() }
        guard first == second else { throw CLIError(.usage, "terminal", "the two entries differ; nothing was stored") }
        return Data(first)
    }
}
