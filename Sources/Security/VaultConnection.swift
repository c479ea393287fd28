import Foundation
import Synchronization
import Vault
import VaultFleet

/// Which vault the SecItem functions use, and as which client: resolved from the environment, one
/// cached handle per process, re-resolved when the environment that chose it changes.
///
/// - Vault: `VAULT_DIR`, else the default location (`Vault.open(at: nil)`); created by the first add,
///   never by a read.
/// - Client: `VAULT_ENTITLEMENTS`, else `VAULT_APP_ID`/`VAULT_ACCESS_GROUPS`, else the bundle
///   identifier, else the executable's name (see `Client.fromEnvironment`).
enum VaultConnection {
    /// The variables whose values choose the vault and the client.
    static let variables = [
        "VAULT_DIR", "XDG_DATA_HOME", "HOME", "VAULT_ENTITLEMENTS", "VAULT_APP_ID", "VAULT_ACCESS_GROUPS",
        "VAULT_KEY_FILE", "CREDENTIALS_DIRECTORY",
    ]

    private struct Cached: Sendable {
        let key: [String?]
        let vault: Vault
    }

    private static let cache = Mutex<Cached?>(nil)

    /// A vault that replaces the environment's for the current task (tests run in parallel, each on
    /// its own temp vault).
    @TaskLocal static var override: Vault?

    /// The process environment, read with getenv each time: cheap, and it sees every setenv.
    static func processEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The vault to use now; `environment` looks variables up (tests pass their own). A read of a vault
    /// that does not exist gets nil (the caller answers `errSecItemNotFound`) and creates nothing: a
    /// mistyped `VAULT_DIR` must not silently make an empty vault; with an external key configured it is
    /// `errSecNoSuchKeychain` naming the path. An add (`creating`) creates it, as
    /// Apple's keychain always exists, unless the key is external (a systemd credential,
    /// `VAULT_KEY_FILE`): then nothing is created implicitly and the add fails `errSecNoSuchKeychain`.
    static func current(creating: Bool, environment lookup: (String) -> String? = processEnvironment)
        throws(VaultError) -> Vault?
    {
        if let override { return override }
        let key = variables.map(lookup)
        return try cache.withLock { cached throws(VaultError) -> Vault? in
            if let cached, cached.key == key { return cached.vault }
            var environment: [String: String] = [:]
            for (name, value) in zip(variables, key) { environment[name] = value }
            let client = try Client.fromEnvironment(
                environment, fallbackApplicationIdentifier: fallbackApplicationIdentifier())
            let directory = environment["VAULT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            let vault: Vault
            do throws(VaultError) {
                // Fleet groups (their items in etcd) work through SecItem as any other group.
                vault = try Vault.open(
                    at: directory, client: client, createIfMissing: creating, keySource: .fromEnvironment(environment),
                    fleet: .etcd())
            } catch  where error.status == .noSuchVault && !creating && !Vault.usesExternalKey(environment) {
                // No vault yet holds no item. With an external key (a systemd credential) the vault was
                // set up on purpose, so a missing one is a mistyped path: that stays errSecNoSuchKeychain.
                return nil
            }
            cached = Cached(key: key, vault: vault)
            return vault
        }
    }

    /// The bundle identifier, else the executable's name with characters an access group cannot hold
    /// replaced by "-".
    static func fallbackApplicationIdentifier() -> String {
        if let identifier = Bundle.main.bundleIdentifier, !identifier.isEmpty { return identifier }
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "").lastPathComponent
        return sanitizedGroupName(name.isEmpty ? ProcessInfo.processInfo.processName : name)
    }

    /// `name` made into a valid access-group name: `[A-Za-z0-9._-]`, no leading '.', at most 200 bytes.
    static func sanitizedGroupName(_ name: String) -> String {
        var result = String(
            name.unicodeScalars.map { scalar -> Character in
                switch scalar {
                case "A"..."Z", "a"..."z", "0"..."9", ".", "_", "-": return Character(scalar)
                default: return "-"
                }
            })
        while result.hasPrefix(".") { result.removeFirst() }
        if result.isEmpty { result = "app" }
        return String(result.prefix(200))
    }
}
