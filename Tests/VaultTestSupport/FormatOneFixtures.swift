import Foundation

/// The committed vaults of the old format 1 (`Tests/VaultTests/Fixtures`), which the upgrade reads:
/// the only way a test gets one, since this build writes no format-1 vault.
package enum FormatOneFixture: String, CaseIterable, Sendable, CustomStringConvertible {
    /// A plain `master.key`; `postgres`/`app` is "v2" (put twice, so it has a generation record),
    /// `api`/`ci` is "api-token" in `com.example.app`, `cache`/`key` is "shared" in `team.shared`.
    case plain = "v1-vault"
    /// The key in an external file (`vault.key` beside the vault directory); `postgres`/`app` is
    /// "pg-secret" (when unlocked), `api`/`ci` "api-token" (after first unlock), `cache`/`key`
    /// "shared" (always), each put twice.
    case keyFile = "v1-keyfile"
    /// `master.key` wrapped under "correct horse battery staple" (minimum Argon2id cost), with
    /// `always.key`; the items of `keyFile`.
    case passphrase = "v1-passphrase"

    /// The fixture's name.
    package var description: String { rawValue }

    /// The passphrase of `passphrase`.
    package static let passphraseText = "correct horse battery staple"

    /// Where the fixture is in the source tree.
    var source: String {
        let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("VaultTests/Fixtures/\(rawValue)").path
        // The key-file and passphrase fixtures keep the vault in a subdirectory, beside the key file.
        return self == .plain ? fixtures : fixtures + "/vault"
    }

    /// Copies the fixture's vault to `vaultPath` (which must not exist) with the modes a vault has (git
    /// keeps none of them); the key file of `keyFile` goes to `keyFilePath` (0600).
    package func copy(to vaultPath: String, keyFilePath: String? = nil) throws {
        let files = FileManager.default
        try files.copyItem(atPath: source, toPath: vaultPath)
        try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: vaultPath)
        let walker = files.enumerator(atPath: vaultPath)!
        while let relative = walker.nextObject() as? String {
            let full = vaultPath + "/" + relative
            let attributes = try files.attributesOfItem(atPath: full)
            guard attributes[.type] as? FileAttributeType != .typeSymbolicLink else { continue }
            let isDirectory = attributes[.type] as? FileAttributeType == .typeDirectory
            try files.setAttributes([.posixPermissions: isDirectory ? 0o700 : 0o600], ofItemAtPath: full)
        }
        if self == .keyFile, let keyFilePath {
            try files.copyItem(atPath: source + "/../vault.key", toPath: keyFilePath)
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: keyFilePath)
        }
    }

    /// The format version that the `VAULT` marker at `vaultPath` says (its byte 4).
    package static func version(at vaultPath: String) throws -> UInt8 {
        try [UInt8](Data(contentsOf: URL(fileURLWithPath: vaultPath + "/VAULT")))[4]
    }
}
