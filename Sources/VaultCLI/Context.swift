import FoundationEssentials
import Vault
import VaultCrypto
import VaultStore
import VaultSystem

/// What a command runs with: the global options, the environment, and the three standard streams.
struct Context {
    let global: GlobalOptions
    let environment: [String: String]
    let input: FileDescriptor
    let output: FileDescriptor
    let errors: FileDescriptor
    /// The passphrases of this run, asked for (or read) at most once each.
    let passphrases: PassphraseSource
    /// The external key, read before the tool took the identity of the vault's owner (`VaultOwner`).
    let preloadedKey: SymmetricKey?
    /// The backup files root opened before it took the owner's identity (`RootOpenedFiles`).
    let rootOpened: RootOpenedFiles
    /// How the vault reaches its fleet groups (`vault-fleet`'s etcd client); nil in the static `vault`,
    /// which hands a command that needs one to `vault-fleet` (`FleetHandoff`).
    let fleet: FleetClient?

    init(
        global: GlobalOptions, environment: [String: String], input: FileDescriptor, output: FileDescriptor,
        errors: FileDescriptor, preloadedKey: SymmetricKey? = nil, rootOpened: RootOpenedFiles = .none,
        fleet: FleetClient? = nil
    ) {
        self.fleet = fleet
        self.global = global
        self.environment = environment
        self.input = input
        self.output = output
        self.errors = errors
        self.preloadedKey = preloadedKey
        self.rootOpened = rootOpened
        passphrases = PassphraseSource(
            descriptor: global.passphraseDescriptor.map { FileDescriptor(rawValue: $0) }, errors: errors)
    }

    /// The default application identifier of the tool's client.
    static let defaultApplicationIdentifier = "vault"

    /// The vault directory: `--vault`, else the default location.
    func vaultPath() throws(CLIError) -> String {
        if let path = global.vaultPath { return path }
        guard let path = VaultLocation.defaultPath(environment: environment) else {
            throw CLIError(.noVault, nil, "no vault location: pass --vault DIR or set VAULT_DIR or HOME")
        }
        return path
    }

    /// The client the command acts as: `--app` and `--group` when given, else the environment
    /// (VAULT_ENTITLEMENTS, VAULT_APP_ID, VAULT_ACCESS_GROUPS), else the application identifier "vault".
    /// `including` adds access groups that the command's own operands name (`vault run`'s
    /// `@GROUP/SERVICE`), as `--group` does for one.
    func client(including extraGroups: [AccessGroup] = []) throws(CLIError) -> Client {
        // The option or variable at fault is named: each of these is an access group's name (the
        // variables count only without VAULT_ENTITLEMENTS, which names its own file in its errors).
        let entitled = !(environment["VAULT_ENTITLEMENTS"] ?? "").isEmpty
        var names: [(source: String, value: String?)] = [("--app", global.applicationIdentifier)]
        if !entitled {
            names.append(("VAULT_APP_ID", environment["VAULT_APP_ID"].flatMap { $0.isEmpty ? nil : $0 }))
            for name in (environment["VAULT_ACCESS_GROUPS"] ?? "").split(separator: ",") {
                let trimmed = String(name.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
                if !trimmed.isEmpty { names.append(("VAULT_ACCESS_GROUPS", trimmed)) }
            }
        }
        for (source, value) in names {
            guard let value else { continue }
            do {
                _ = try AccessGroup(value)
            } catch {
                throw CLIError(.usage, source, error.message)
            }
        }
        do {
            let base = try Client.fromEnvironment(
                environment, fallbackApplicationIdentifier: Self.defaultApplicationIdentifier)
            guard global.applicationIdentifier != nil || global.group != nil || !extraGroups.isEmpty else {
                return base
            }
            let app = global.applicationIdentifier ?? base.applicationIdentifier ?? Self.defaultApplicationIdentifier
            var groups: [String]
            if let group = global.group {
                groups = [group]
            } else {
                groups = base.accessGroups.map(\.rawValue).filter { $0 != base.applicationIdentifier }
            }
            for group in extraGroups.map(\.rawValue) where !groups.contains(group) { groups.append(group) }
            return try Client(applicationIdentifier: app, accessGroups: groups)
        } catch {
            throw CLIError(ExitCode(error.status), "client", error.message)
        }
    }

    /// The group named by `--group`, validated.
    func group() throws(CLIError) -> AccessGroup? {
        guard let name = global.group else { return nil }
        do {
            return try AccessGroup(name)
        } catch {
            throw CLIError(.usage, "--group", error.message)
        }
    }

    /// The generic password `service`/`account` in the `--group` group, as the history commands name it.
    func itemKey(service: String, account: String) throws(CLIError) -> ItemKey {
        let group = try group()
        do {
            return try ItemKey(service: service, account: account, group: group)
        } catch {
            throw CLIError(.usage, "service \"\(service)\"", error.message)
        }
    }

    /// Where the master key comes from: `--key-file`, else the environment (`VAULT_KEY_FILE`, a systemd
    /// credential), else `master.key`; passphrases from `--passphrase-fd N`, else a prompt on the
    /// terminal.
    func keySource(limits: PassphraseKeyDerivation.Limits = .moderate) -> KeySource {
        var source = global.keyFile.map { KeySource(keyFile: $0) } ?? KeySource.fromEnvironment(environment)
        source.passphrase = passphrases.provider
        source.limits = limits
        if source.keyFile != nil { source.loadedKey = preloadedKey }
        return source
    }

    /// A passphrase the command asks for itself (a backup's, a new one for the vault's key), from the
    /// same source.
    func passphrase(_ request: PassphraseRequest, subject: String) throws(CLIError) -> SecureBytes {
        do {
            return try passphrases.passphrase(request)
        } catch {
            throw CLIError(ExitCode(VaultError(error).status), subject, error.message)
        }
    }

    /// Opens the existing vault as the command's client; with `creatingIfMissing` (a credential
    /// helper's store, the first write as an Apple keychain's first add) a missing one is created,
    /// unless the key is external (then nothing is created implicitly). A member of shared groups that
    /// names no client (no `--app`, `--group`, `VAULT_APP_ID`,
    /// `VAULT_ACCESS_GROUPS` or `VAULT_ENTITLEMENTS`) acts with the shared groups of its Unix groups
    /// (`Vault.sharedGroups`): it finds its items without knowing their groups' names. An add then goes
    /// to the one shared group; with several, `adding` asks for `--group`.
    func openVault(
        creatingIfMissing: Bool = false, includingGroups extraGroups: [AccessGroup] = [], adding: Bool = false
    ) throws(CLIError) -> Vault {
        let vault = try openVaultAsClient(creatingIfMissing: creatingIfMissing, includingGroups: extraGroups)
        guard vault.isMember, extraGroups.isEmpty, namesNoClient else { return vault }
        let shared = vault.sharedGroups
        guard !shared.isEmpty else { return vault }
        if adding, shared.count > 1 {
            throw CLIError(
                .usage, "--group",
                "you are a member of shared groups \(shared.map(\.rawValue).joined(separator: ", ")) of the vault at "
                    + "\(vault.path): say which one the item goes to with --group")
        }
        do {
            return vault.asClient(
                try Client(
                    applicationIdentifier: Self.defaultApplicationIdentifier, accessGroups: shared.map(\.rawValue)))
        } catch {
            throw CLIError(ExitCode(error.status), "client", error.message)
        }
    }

    /// Whether the command line and the environment name no client (`client()` falls back to the
    /// tool's own identity).
    var namesNoClient: Bool {
        global.applicationIdentifier == nil && global.group == nil
            && ["VAULT_ENTITLEMENTS", "VAULT_APP_ID", "VAULT_ACCESS_GROUPS"].allSatisfy {
                (environment[$0] ?? "").isEmpty
            }
    }

    /// Opens the existing vault as the command's client (`openVault`, before a member's shared groups).
    private func openVaultAsClient(creatingIfMissing: Bool, includingGroups extraGroups: [AccessGroup])
        throws(CLIError) -> Vault
    {
        let path = try vaultPath()
        let client = try client(including: extraGroups)
        let vault: Vault
        do {
            do {
                vault = try Vault.open(at: path, client: client, keySource: keySource(), fleet: fleet)
            } catch  where error.status == .noSuchVault && creatingIfMissing {
                // Made implicitly, as an Apple keychain's first add: with a plain key file (no
                // passphrase to ask for at a helper's first write).
                var plain = keySource()
                plain.passphrase = nil
                vault = try Vault.open(at: path, client: client, createIfMissing: true, keySource: plain, fleet: fleet)
            }
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
        sayUpgrade(of: vault)
        return vault
    }

    /// What a command says once on standard error when its open upgraded a format-1 vault.
    static let upgradeNotice = "upgraded from the old format 1 to the current format (a key per access group)"

    /// Says on standard error that opening `vault` upgraded it, when it did.
    private func sayUpgrade(of vault: Vault) {
        if vault.upgradedOnOpen { writeError("vault: \(vault.path): \(Self.upgradeNotice)\n") }
    }

    /// The vault at `path` opened with `source` (a rekey's or an upgrade's, which want the master key
    /// itself), a failure reported against the path.
    func openVault(at path: String, keySource source: KeySource, sayingUpgrade: Bool = true) throws(CLIError)
        -> Vault
    {
        let client = try client()
        let vault: Vault
        do {
            vault = try Vault.open(at: path, client: client, keySource: source, fleet: fleet)
        } catch {
            throw CLIError(error, subject: path, vaultPath: path)
        }
        if sayingUpgrade { sayUpgrade(of: vault) }
        return vault
    }

    /// The existing vault, or nil when there is none at the path (a credential helper's read: no vault
    /// holds no credential).
    func openVaultIfPresent() throws(CLIError) -> Vault? {
        do {
            return try openVault()
        } catch {
            if error.code == .noVault { return nil }
            throw error
        }
    }

    /// Runs a vault operation; a failure is reported against `subject`.
    func attempt<R>(_ vault: Vault, _ subject: String, _ body: () throws(VaultError) -> R) throws(CLIError) -> R {
        do {
            return try body()
        } catch {
            throw CLIError(error, subject: subject, vaultPath: vault.path, searched: searchedGroups(vault))
        }
    }

    /// The groups a search of this command looks in: `--group`, else the client's.
    func searchedGroups(_ vault: Vault) -> [AccessGroup] {
        global.group.flatMap { try? AccessGroup($0) }.map { [$0] } ?? vault.client.accessGroups
    }

    /// Says on standard error which fleet groups this command answered from the cache of, etcd being
    /// out of reach, and as of when, and a rollback accepted on another machine that a read took;
    /// whether any answer came from the cache.
    @discardableResult
    func noteStaleFleetReads(_ vault: Vault) -> Bool {
        var any = false
        for group in searchedGroups(vault) {
            guard let status = vault.fleetCacheStatus(of: group) else { continue }
            if let accepted = status.acceptedRollback { writeError("vault: note: \(accepted)\n") }
            guard status.isStale else { continue }
            any = true
            let since =
                status.knownCurrentAt.map {
                    "as it was at " + UTCTimestamp.iso8601(nanosecondsSince1970: $0)
                } ?? "never confirmed"
            writeError(
                "vault: etcd is out of reach: answered from this machine's cache of fleet group \(group), \(since)\n")
        }
        return any
    }

    /// Notes the fleet groups answered from the cache (`noteStaleFleetReads`) once the command's answer is
    /// written; with `report` (`--report-stale`), such an answer is then exit status 10.
    func finishFleetReads(_ vault: Vault, report: Bool) throws(CLIError) {
        if noteStaleFleetReads(vault), report { throw CLIError(.stale, nil, "", reported: true) }
    }

    /// Writes text to standard output.
    func write(_ text: String) throws(CLIError) {
        try write(bytes: Array(text.utf8))
    }

    /// Writes bytes to standard output.
    /// Writes `secret` to standard output from its secure memory, with no copy on the way.
    func write(secret: SecureBytes) throws(CLIError) {
        do {
            try secret.withSpan { (span) throws(Errno) in try output.writeAll(span) }
        } catch {
            throw CLIError(.io, "standard output", "\(error)")
        }
    }

    func write(bytes: [UInt8]) throws(CLIError) {
        do {
            try output.writeAll(bytes)
        } catch {
            throw CLIError(.io, "standard output", "\(error)")
        }
    }

    /// Writes a prompt or a report to standard error, escaped (`Output.escape`) but for a final line
    /// break: the text names items and paths, which must not drive the terminal.
    func writeError(_ text: String) {
        if text.hasSuffix("\n") {
            writeRawError(Output.escape(String(text.dropLast())) + "\n")
        } else {
            writeRawError(Output.escape(text))
        }
    }

    /// Writes an error's line to standard error.
    func writeError(_ error: CLIError) {
        writeRawError(error.line)
    }

    /// Names each problem on standard error as `vault: PATH: why`, then fails with `summary` and the
    /// problems' exit status (`ExitCode(problems:)`); does nothing when there are none.
    func report(_ problems: [ItemProblem], command: String, summary: String) throws(CLIError) {
        guard !problems.isEmpty else { return }
        list(problems)
        throw CLIError(ExitCode(problems: problems), command, summary)
    }

    /// Names each problem on standard error as `vault: PATH: why`.
    func list(_ problems: [ItemProblem]) {
        for problem in problems {
            writeError(CLIError(ExitCode(problem.status), problem.path, problem.reason))
        }
    }

    /// Says on standard error that each of `removed` (damaged item files) was removed, and why.
    func listRemoved(_ removed: [ItemProblem]) {
        for problem in removed {
            writeError(CLIError(.success, problem.path, "removed the damaged item file (\(problem.reason))"))
        }
    }

    private func writeRawError(_ text: String) {
        try? errors.writeAll(Array(text.utf8))
    }
}
