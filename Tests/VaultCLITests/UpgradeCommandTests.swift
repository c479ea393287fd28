import Foundation
import Testing
import VaultTestSupport

/// A vault of the old format 1 from the command line, with each kind of key: a plain `master.key`, an
/// external key file (`--key-file`) and a passphrase (`--passphrase-fd`). The first command that opens
/// it with its key upgrades it and says so once; `vault upgrade` does it on purpose. The key is the same
/// before and after.
@Suite struct UpgradeCommandTests {
    static let notice = "upgraded from the old format 1 to the current format"

    /// Every path under `root` with its size, to tell that nothing changed.
    static func tree(_ root: String) throws -> [String] {
        let walker = FileManager.default.enumerator(atPath: root)!
        var entries: [String] = []
        while let relative = walker.nextObject() as? String {
            let size = (try FileManager.default.attributesOfItem(atPath: root + "/" + relative))[.size] as? Int
            entries.append("\(relative) \(size ?? -1)")
        }
        return entries.sorted()
    }

    /// Runs `body` with `directory` read-only: a read-only bind mount of it for root (whom modes do
    /// not stop), mode 0500 for anyone else.
    static func withReadOnly(_ directory: String, _ body: () throws -> Void) throws {
        guard getuid() == 0 else {
            try #require(chmod(directory, 0o500) == 0)
            defer { chmod(directory, 0o700) }
            return try body()
        }
        func run(_ tool: String, _ arguments: [String]) throws -> Int32 {
            let process = try Process.run(URL(fileURLWithPath: "/usr/bin/" + tool), arguments: arguments)
            process.waitUntilExit()
            return process.terminationStatus
        }
        try #require(try run("mount", ["--bind", directory, directory]) == 0)
        defer { _ = try? run("umount", [directory]) }
        try #require(try run("mount", ["-o", "remount,bind,ro", directory]) == 0)
        try body()
    }

    @Test func theFirstCommandUpgradesAFormatOneVaultOnceAndKeepsItsItems() throws {
        try withScratch { scratch in
            try FormatOneFixture.plain.copy(to: scratch.vault)
            let first = try scratch.run(["--group", "com.example.app", "get", "postgres", "app"])
            #expect(first.status == 0 && first.output == Data("v2"), "\(first.errors)")
            #expect(first.errors == "vault: \(scratch.vault): \(Self.notice) (a key per access group)\n")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 2)
            let second = try scratch.run(["--group", "team.shared", "get", "cache", "key"])
            #expect(second.output == Data("shared") && second.errors.isEmpty, "\(second.errors)")
            // What format 1 could not do: a group of its own key.
            #expect(try scratch.run(["group", "create", "web"]).status == 0)
            let again = try scratch.run(["upgrade"])
            #expect(again.status == 3 && again.errors.contains("current format already"), "\(again.errors)")
        }
    }

    @Test func upgradeConvertsAFormatOneVaultOnPurpose() throws {
        try withScratch { scratch in
            try FormatOneFixture.plain.copy(to: scratch.vault)
            let upgraded = try scratch.run(["upgrade"])
            #expect(upgraded.status == 0, "\(upgraded.errors)")
            #expect(upgraded.errors == "vault: \(scratch.vault): \(Self.notice) (a key per access group)\n")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 2)
            #expect(try scratch.run(["--group", "com.example.app", "get", "api", "ci"]).output == Data("api-token"))
        }
    }

    @Test func aKeyFileVaultIsUpgradedByTheFirstCommandWithItsKeyFile() throws {
        try withScratch { scratch in
            let keyFile = scratch.root + "/vault.key"
            try FormatOneFixture.keyFile.copy(to: scratch.vault, keyFilePath: keyFile)
            let key = ["--key-file", keyFile]
            let keyBefore = try Data(contentsOf: URL(fileURLWithPath: keyFile))
            // Without its key file nothing opens, and the vault stays format 1.
            let keyless = try scratch.run(["upgrade"])
            #expect(keyless.status != 0, "\(keyless.errors)")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 1)
            let get = try scratch.run(key + ["--group", "com.example.app", "get", "postgres", "app"])
            #expect(get.status == 0 && get.output == Data("pg-secret"), "\(get.errors)")
            #expect(get.errors.contains(Self.notice), "\(get.errors)")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 2)
            #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)) == keyBefore)
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
            #expect(try scratch.run(key + ["--group", "team.shared", "get", "cache", "key"]).output == Data("shared"))
            #expect(try scratch.run(key + ["group", "create", "web"]).status == 0)
        }
    }

    @Test func aPassphraseVaultOpenedWithoutItsPassphraseSaysUpgradeAndChangesNothing() throws {
        try withScratch { scratch in
            try FormatOneFixture.passphrase.copy(to: scratch.vault)
            let pass = ["--passphrase-fd", "0"]
            let passphrase = Data((FormatOneFixture.passphraseText + "\n").utf8)
            let before = try Self.tree(scratch.vault)
            // An always-readable item needs no passphrase, but the upgrade needs the master key: exit 5,
            // a message that names the vault and `vault upgrade`, and nothing changed.
            let locked = try scratch.run(["--group", "team.shared", "get", "cache", "key"] + pass, input: Data())
            #expect(locked.status == 5, "\(locked.errors)")
            #expect(
                locked.errors.contains(scratch.vault) && locked.errors.contains("`vault upgrade`"), "\(locked.errors)")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 1)
            #expect(try Self.tree(scratch.vault) == before)
            let wrong = try scratch.run(["upgrade"] + pass, input: Data("not it\n"))
            #expect(wrong.status == 4, "\(wrong.errors)")
            let upgraded = try scratch.run(["upgrade"] + pass, input: passphrase)
            #expect(upgraded.status == 0, "\(upgraded.errors)")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 2)
            // The same passphrase opens it, and only that one.
            let get = try scratch.run(
                ["--group", "com.example.app", "get", "postgres", "app"] + pass, input: passphrase)
            #expect(get.status == 0 && get.output == Data("pg-secret"), "\(get.errors)")
            let other = try scratch.run(
                ["--group", "com.example.app", "get", "postgres", "app"] + pass, input: Data("no\n"))
            #expect(other.status == 4)
        }
    }

    /// The upgrade and the open after it unwrap the same `master.key`: the passphrase is read once (one
    /// line of --passphrase-fd serves the command).
    @Test func aPassphraseVaultIsUpgradedWithOnePassphrase() throws {
        try withScratch { scratch in
            try FormatOneFixture.passphrase.copy(to: scratch.vault)
            let get = try scratch.run(
                ["--group", "com.example.app", "get", "postgres", "app", "--passphrase-fd", "0"],
                input: Data((FormatOneFixture.passphraseText + "\n").utf8))
            #expect(get.status == 0 && get.output == Data("pg-secret"), "\(get.errors)")
            #expect(get.errors.contains(Self.notice), "\(get.errors)")
            #expect(try FormatOneFixture.version(at: scratch.vault) == 2)
        }
    }

    @Test func aReadOnlyVaultSaysUpgradeAndChangesNothing() throws {
        try withScratch { scratch in
            try FormatOneFixture.plain.copy(to: scratch.vault)
            let before = try Self.tree(scratch.vault)
            try Self.withReadOnly(scratch.vault) {
                let refused = try scratch.run(["--group", "com.example.app", "get", "postgres", "app"])
                #expect(refused.status != 0 && refused.output.isEmpty, "\(refused.errors)")
                #expect(
                    refused.errors.contains(scratch.vault) && refused.errors.contains("`vault upgrade`"),
                    "\(refused.errors)")
            }
            #expect(try FormatOneFixture.version(at: scratch.vault) == 1)
            #expect(try Self.tree(scratch.vault) == before)
        }
    }
}
