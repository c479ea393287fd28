import Foundation
import Vault
import VaultSystem

/// A fresh directory under the system's temp directory, for one test. `withTemporaryDirectory`
/// removes it when the test's body ends, however it ends.
package struct TemporaryDirectory: Sendable {
    /// The directory.
    package let path: String

    /// Makes the directory, named `vault-LABEL-UUID` (`vault-UUID` without a label).
    package init(_ label: String? = nil) throws {
        let name = ["vault", label, UUID().uuidString].compactMap { $0 }.joined(separator: "-")
        path = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// `relative` inside the directory.
    package func file(_ relative: String) -> String {
        relative.isEmpty ? path : (FilePath(path) / relative).string
    }

    /// The directory, opened.
    package func open() throws -> FileDescriptor {
        try FileDescriptor.currentWorkingDirectory.openDirectoryAt(path)
    }

    /// Removes the directory and everything in it (made removable first: tests chmod things).
    package func remove() {
        for path in [path, file("vault")] {
            _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A vault path (`vault`, not created) in a fresh temp directory, with helpers for the files of the
/// vault. `withTemporaryVault` removes it all when the test's body ends.
package struct TemporaryVault: Sendable {
    /// The directory that holds the vault (and whatever else a test puts beside it).
    package let directory: TemporaryDirectory

    /// The temp directory's path.
    package var root: String { directory.path }
    /// The vault's path: `root/vault`.
    package var path: String { directory.file("vault") }

    /// A vault path in a new temp directory.
    package init(_ label: String? = nil) throws {
        directory = try TemporaryDirectory(label)
    }

    /// Removes the temp directory and the vault in it.
    package func remove() { directory.remove() }

    /// `relative` inside the vault.
    package func file(_ relative: String) -> String {
        relative.isEmpty ? path : (FilePath(path) / relative).string
    }

    /// The bytes of the vault's file `relative`.
    package func bytes(_ relative: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: file(relative))))
    }

    /// Writes `bytes` to the vault's file `relative`.
    package func write(_ bytes: [UInt8], to relative: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: file(relative)))
    }

    /// The permission bits of `relative`.
    package func mode(_ relative: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: file(relative))[.posixPermissions] as? NSNumber)?.intValue
            ?? -1
    }

    /// Sets the permission bits of `relative` ("" for the vault directory).
    package func chmod(_ relative: String, _ mode: Int) throws {
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file(relative))
    }

    /// The names in the vault's directory `relative`, sorted.
    package func entries(_ relative: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: file(relative)).sorted()
    }

    /// The vault opened as `client` (created when missing).
    package func open(_ client: Client) throws -> Vault {
        try Vault.open(at: path, client: client, createIfMissing: true)
    }

    /// The vault opened as the client `app` with `groups` (created when missing).
    package func open(app: String = "com.example.app", groups: [String] = []) throws -> Vault {
        try open(try Client(applicationIdentifier: app, accessGroups: groups))
    }
}

/// Runs `body` with a fresh temp directory, removed when `body` ends.
package func withTemporaryDirectory<R>(_ label: String? = nil, _ body: (TemporaryDirectory) throws -> R) throws -> R {
    let directory = try TemporaryDirectory(label)
    defer { directory.remove() }
    return try body(directory)
}

/// Runs `body` with a vault path in a fresh temp directory, all removed when `body` ends.
package func withTemporaryVault<R>(_ label: String? = nil, _ body: (TemporaryVault) throws -> R) throws -> R {
    let vault = try TemporaryVault(label)
    defer { vault.remove() }
    return try body(vault)
}

/// `withTemporaryVault` for an asynchronous body.
package func withTemporaryVault<R>(_ label: String? = nil, _ body: (TemporaryVault) async throws -> R) async throws
    -> R
{
    let vault = try TemporaryVault(label)
    defer { vault.remove() }
    return try await body(vault)
}

extension Data {
    /// The UTF-8 bytes of `text`.
    package init(_ text: String) { self = Data(text.utf8) }
}
