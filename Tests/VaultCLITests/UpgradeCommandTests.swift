import Foundation
import Testing
import VaultTestSupport

/// `vault upgrade` of a vault of each kind of key: a plain `master.key`, an external key file
/// (`--key-file`) and a passphrase (`--passphrase-fd`). The key is the same before and after.
@Suite struct UpgradeCommandTests {
    @Test func upgradeConvertsAFormatOneVaultAndKeepsItsItems() throws {
        try withScratch(initialized: true) { scratch in
            #expect(try scratch.run(["--group", "db", "put", "pg", "app"], input: Data("one")).status == 0)
            let refused = try scratch.run(["group", "create", "web"])
            #expect(refused.errors.contains("--format 2"), "\(refused.errors)")
            let upgraded = try scratch.run(["upgrade"])
            #expect(upgraded.status == 0, "\(upgraded.errors)")
            #expect(upgraded.errors.contains("upgraded to format 2"))
            #expect(try scratch.run(["--group", "db", "get", "pg", "app"]).output == Data("one"))
            #expect(try scratch.run(["group", "create", "web"]).status == 0)
            let again = try scratch.run(["upgrade"])
            #expect(again.status == 3 && again.errors.contains("format 2 already"), "\(again.errors)")
        }
    }

    @Test func upgradeOfAKeyFileVaultKeepsItsItemsAndItsKeyFile() throws {
        try withScratch { scratch in
            let keyFile = scratch.root + "/vault.key"
            #expect(try scratch.run(["init", "--key-file", keyFile]).status == 0)
            let key = ["--key-file", keyFile]
            #expect(try scratch.run(key + ["--group", "db", "put", "pg", "app"], input: Data("one")).status == 0)
            #expect(try scratch.run(key + ["put", "api"], input: Data("two")).status == 0)
            let keyBefore = try Data(contentsOf: URL(fileURLWithPath: keyFile))
            // Without its key file the vault cannot be upgraded, and stays format 1.
            let keyless = try scratch.run(["upgrade"])
            #expect(keyless.status != 0, "\(keyless.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/VAULT"))[4] == 1)
            let upgraded = try scratch.run(key + ["upgrade"])
            #expect(upgraded.status == 0, "\(upgraded.errors)")
            #expect(upgraded.errors.contains("upgraded to format 2"), "\(upgraded.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/VAULT"))[4] == 2)
            #expect(try Data(contentsOf: URL(fileURLWithPath: keyFile)) == keyBefore)
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
            #expect(try scratch.run(key + ["--group", "db", "get", "pg", "app"]).output == Data("one"))
            #expect(try scratch.run(key + ["get", "api"]).output == Data("two"))
            #expect(try scratch.run(key + ["group", "create", "web"]).status == 0)
        }
    }

    @Test func upgradeOfAPassphraseVaultAsksForItAndKeepsIt() throws {
        try withScratch { scratch in
            let pass = ["--passphrase-fd", "0"]
            let made = try scratch.run(
                ["init", "--passphrase", "--kdf-cost", "minimum"] + pass, input: Data("first pass\n"))
            #expect(made.status == 0, "\(made.errors)")
            let put = try scratch.shell(
                "printf one | \"$V\" --vault \"$D\" --group db put pg app --passphrase-fd 3 3<<< 'first pass'")
            #expect(put.status == 0, "\(put.errors)")
            // No passphrase to be had: exit 5, and the vault stays format 1.
            let locked = try scratch.run(["upgrade"] + pass, input: Data())
            #expect(locked.status == 5, "\(locked.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/VAULT"))[4] == 1)
            let wrong = try scratch.run(["upgrade"] + pass, input: Data("not it\n"))
            #expect(wrong.status == 4, "\(wrong.errors)")
            let upgraded = try scratch.run(["upgrade"] + pass, input: Data("first pass\n"))
            #expect(upgraded.status == 0, "\(upgraded.errors)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/VAULT"))[4] == 2)
            // The same passphrase opens it, and only that one.
            let get = try scratch.run(["--group", "db", "get", "pg", "app"] + pass, input: Data("first pass\n"))
            #expect(get.status == 0 && get.output == Data("one"), "\(get.errors)")
            #expect(try scratch.run(["--group", "db", "get", "pg", "app"] + pass, input: Data("no\n")).status == 4)
        }
    }
}
