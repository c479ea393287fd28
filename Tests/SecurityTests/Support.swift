import Foundation
import Testing
import Vault
import VaultTestSupport

@testable import Security

/// A vault in a fresh temp directory that the SecItem functions of the current task use (through
/// `VaultConnection.override`), so that tests run in parallel, each on its own vault.
struct TempVault {
    let directory: TemporaryVault
    var root: String { directory.root }
    var path: String { directory.path }
    let vault: Vault

    init(app: String = "TEAMID.com.example.app", groups: [String] = []) throws {
        directory = try TemporaryVault("security")
        vault = try directory.open(try Client(applicationIdentifier: app, accessGroups: groups))
    }

    /// Runs `body` with a fresh temp vault (not made the SecItem functions' vault), then removes it.
    static func with<R>(_ body: (TempVault) throws -> R) throws -> R {
        let temp = try TempVault()
        defer { temp.directory.remove() }
        return try body(temp)
    }

    /// Runs `body` with the SecItem functions on this vault, then removes it.
    func run<R>(_ body: () throws -> R) rethrows -> R {
        defer { directory.remove() }
        return try VaultConnection.$override.withValue(vault) { try body() }
    }

    /// Runs `body` with the SecItem functions on this vault seen as another client (the vault stays).
    func asClient<R>(app: String, groups: [String] = [], _ body: () throws -> R) throws -> R {
        let other = vault.asClient(try Client(applicationIdentifier: app, accessGroups: groups))
        return try VaultConnection.$override.withValue(other) { try body() }
    }
}

/// Runs `body` on a fresh temp vault as the SecItem functions' vault.
func withTempVault<R>(app: String = "TEAMID.com.example.app", groups: [String] = [], _ body: () throws -> R) throws
    -> R
{
    try TempVault(app: app, groups: groups).run(body)
}

/// Adds a generic password the Apple way; returns the status.
@discardableResult
func addGenericPassword(service: String, account: String, password: String, extra: [String: Any] = [:]) -> OSStatus {
    var query: [String: Any] = [
        kSecClass as String: kSecClassGenericPassword,
        kSecAttrService as String: service,
        kSecAttrAccount as String: account,
        kSecValueData as String: password.data(using: .utf8)!,
    ]
    query.merge(extra) { _, new in new }
    return SecItemAdd(query as CFDictionary, nil)
}

/// The directory of the test bundle's executables (for the example binary).
func builtProduct(_ name: String) -> URL {
    URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name)
}
