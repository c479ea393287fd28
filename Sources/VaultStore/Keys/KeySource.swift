import FoundationEssentials
import Synchronization
import VaultCrypto
import VaultSystem

/// Where the master key comes from, beyond the vault's own plain `master.key`:
/// - an external key file (`--key-file PATH`, `VAULT_KEY_FILE`, or a systemd credential in
///   `$CREDENTIALS_DIRECTORY`), 32 raw bytes, for vaults created with one;
/// - a passphrase, for vaults whose `master.key` is wrapped with Argon2id.
public struct KeySource: Sendable {
    /// Asked for a passphrase: `request` says what for (so whether to ask twice) and names the file
    /// it protects. The returned bytes are wiped when released; never hand a passphrase over as a
    /// `String` that lives on. A provider that cannot give one throws any error: a new vault is then not
    /// made (locked, `errSecInteractionNotAllowed`, naming the key file and the provider's error), and an
    /// existing one opens locked, as with no passphrase: its `Always` items read, the others say locked.
    public typealias PassphraseProvider = @Sendable (_ request: PassphraseRequest) throws -> SecureBytes

    /// An external key file, used instead of `<vault>/master.key`.
    public var keyFile: String?
    /// Supplies the passphrase of a wrapped `master.key` (and, at init, the new one).
    public var passphrase: PassphraseProvider?
    /// The Argon2id cost of a newly wrapped key.
    public var limits: PassphraseKeyDerivation.Limits
    /// Whether a key cached in the kernel keyring by `vault unlock` may be used (the default).
    public var usesUnlockCache = true
    /// The most Argon2id work a wrapped `master.key` may ask for when it is opened (default: libsodium's
    /// `sensitive` preset, 4 passes over 1 GiB); a file asking for more is refused before any work.
    public var costCeiling: PassphraseKeyDerivation.Limits = .sensitive

    /// A key source; with no arguments, the vault's own plain `master.key`.
    public init(
        keyFile: String? = nil, passphrase: PassphraseProvider? = nil,
        limits: PassphraseKeyDerivation.Limits = .moderate
    ) {
        self.keyFile = keyFile
        self.passphrase = passphrase
        self.limits = limits
    }

    /// The external key, read ahead of time from `keyFile`: root reads (or creates) a root-owned key
    /// file before it takes the identity of the vault's owner, who cannot read it. Used instead of
    /// reading `keyFile` again.
    package var loadedKey: SymmetricKey?

    /// This source with its external key file read now (`loadedKey`), or created when `creating` and
    /// the file does not exist (32 random bytes, 0600, in a directory that must exist). Unchanged when
    /// there is no external key file.
    package func loadingExternalKey(creating: Bool) throws(StoreError) -> KeySource {
        guard let keyFile, loadedKey == nil else { return self }
        var source = self
        source.loadedKey =
            creating ? try ExternalKeyFile.loadOrCreate(keyFile) : try ExternalKeyFile.load(keyFile)
        return source
    }

    /// This source, asking its provider for the vault's passphrase (`unlock`) at most once and giving the
    /// same bytes to later requests: an open that upgrades a vault and then opens it again asks the
    /// user (or reads a line of `--passphrase-fd`) once. The copy is wiped when the source goes.
    package func askingForThePassphraseOnce() -> KeySource {
        guard let provider = passphrase else { return self }
        let remembered = RememberedPassphrase()
        var source = self
        source.passphrase = { (request) throws -> SecureBytes in
            guard request.purpose == .unlock else { return try provider(request) }
            if let known = remembered.bytes.withLock({ $0 }) { return try RememberedPassphrase.copy(known) }
            let given = try provider(request)
            let copy = try RememberedPassphrase.copy(given)
            remembered.bytes.withLock { $0 = copy }
            return given
        }
        return source
    }

    /// The passphrase for `request` from the provider (nil when there is none). A provider's own error
    /// that is not the store's is `locked`, naming what the passphrase was for, with that error as cause.
    package func askPassphrase(_ request: PassphraseRequest) throws(StoreError) -> SecureBytes? {
        guard let passphrase else { return nil }
        do {
            return try passphrase(request)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(
                .locked, "no \(request.prompt) was given (the passphrase provider failed: \(error))",
                cause: error)
        }
    }

    /// The name of the systemd credential that holds the key (`LoadCredential=vault.key:…`).
    public static let credentialName = "vault.key"

    /// The key source a process gets from its environment: `VAULT_KEY_FILE`, else
    /// `$CREDENTIALS_DIRECTORY/vault.key` when systemd placed one there, else the vault's `master.key`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> KeySource
    {
        if let file = environment["VAULT_KEY_FILE"], !file.isEmpty { return KeySource(keyFile: file) }
        if let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            let path = FilePath(directory) / credentialName
            if FileManager.default.fileExists(atPath: path.string) { return KeySource(keyFile: path.string) }
        }
        return KeySource()
    }
}

/// What a passphrase is asked for. A new passphrase is typed twice and may not be empty; an existing
/// one is typed once.
public enum PassphrasePurpose: Sendable, Hashable {
    /// The passphrase that unwraps a vault's key (`master.key`).
    case unlock
    /// A new passphrase for a vault's key (init, `passwd`, rekey).
    case newPassphrase
    /// A new passphrase that seals a backup (export).
    case sealBackup
    /// The passphrase of an existing backup (import).
    case openBackup

    /// Whether the passphrase is a new one: typed twice, never empty.
    public var isNew: Bool {
        switch self {
        case .newPassphrase, .sealBackup: return true
        case .unlock, .openBackup: return false
        }
    }
}

/// One request for a passphrase: what it is for, and what it protects.
public struct PassphraseRequest: Sendable, Hashable {
    /// What the passphrase is for.
    public let purpose: PassphrasePurpose
    /// What it protects, as the prompt names it: a path ("/v/master.key") or a description ("the
    /// backup b.vbk").
    public let subject: String

    /// A request for `purpose`, naming `subject`.
    public init(_ purpose: PassphrasePurpose, for subject: String) {
        self.purpose = purpose
        self.subject = subject
    }

    /// The question: "passphrase for SUBJECT", or "new passphrase for SUBJECT".
    public var prompt: String {
        (purpose.isNew ? "new " : "") + "passphrase for \(subject)"
    }
}

/// The passphrase that `KeySource.askingForThePassphraseOnce` gave, for the next request.
private final class RememberedPassphrase: Sendable {
    let bytes = Mutex<SecureBytes?>(nil)

    static func copy(_ passphrase: SecureBytes) throws(StoreError) -> SecureBytes {
        do {
            return try passphrase.appending([])
        } catch {
            throw StoreError.crypto(error, "cannot copy the passphrase into secure memory")
        }
    }
}
