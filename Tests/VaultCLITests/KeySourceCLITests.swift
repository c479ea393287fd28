import Foundation
import Testing
import VaultTestSupport

/// `init --passphrase`, `passwd`, `--passphrase-fd`, `--key-file` and systemd credentials, end to end.
@Suite struct KeySourceCLITests {
    /// Runs `vault` through bash so that a second file descriptor can carry the passphrases while
    /// standard input carries the secret.
    func shell(_ scratch: Scratch, _ command: String, environment: [String: String] = [:]) throws -> RunResult {
        try scratch.shell(command, environment: environment)
    }

    @Test func aPassphraseProtectedVaultFromInitToPasswd() throws {
        try withScratch { scratch in
            let v = "\(vaultExecutable.path) --vault \(scratch.vault)"
            let initialized = try scratch.run(
                ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("first pass\n"))
            #expect(initialized.status == 0, "\(initialized.errors)")
            let keyFile = try Data(contentsOf: URL(fileURLWithPath: scratch.vault + "/master.key"))
            #expect(keyFile.count == 124)
            #expect(!keyFile.contains(Data("first pass".utf8)))

            let put = try shell(scratch, "printf 'the secret' | \(v) put svc --passphrase-fd 3 3<<< 'first pass'")
            #expect(put.status == 0, "\(put.errors)")
            let get = try scratch.run(["get", "svc", "--passphrase-fd", "0"], input: Data("first pass\n"))
            #expect(get.status == 0)
            #expect(get.text == "the secret")

            // Wrong passphrase: access denied (4); none and no terminal: locked (5), never "not found".
            let wrong = try scratch.run(["get", "svc", "--passphrase-fd", "0"], input: Data("nope\n"))
            #expect(wrong.status == 4)
            #expect(wrong.errors.contains("wrong passphrase"))
            let locked = try shell(scratch, "\(v) get svc < /dev/null")
            #expect(locked.status == 5)
            #expect(locked.errors.contains("vault unlock"))

            let passwd = try scratch.run(
                ["passwd", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("first pass\nsecond pass\n"))
            #expect(passwd.status == 0, "\(passwd.errors)")
            #expect(try scratch.run(["get", "svc", "--passphrase-fd", "0"], input: Data("first pass\n")).status == 4)
            #expect(
                try scratch.run(["get", "svc", "--passphrase-fd", "0"], input: Data("second pass\n")).text
                    == "the secret")

            let removed = try scratch.run(["passwd", "--remove", "--passphrase-fd", "0"], input: Data("second pass\n"))
            #expect(removed.status == 0)
            #expect(try scratch.run(["get", "svc"]).text == "the secret")
        }
    }

    @Test func anEmptyNewPassphraseIsRefused() throws {
        try withScratch { scratch in
            let result = try scratch.run(["init", "--passphrase", "--passphrase-fd", "0"], input: Data("\n"))
            #expect(result.status == 2)
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
        }
    }

    @Test func anExternalKeyFileAndASystemdCredential() throws {
        try withScratch { scratch in
            let credentials = scratch.root + "/credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
            let keyFile = credentials + "/vault.key"
            #expect(try scratch.run(["init", "--key-file", keyFile]).status == 0)
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/master.key"))
            #expect(try scratch.run(["--key-file", keyFile, "put", "svc"], input: Data("v")).status == 0)
            // Without the key: locked (5), and the message says how to give it.
            let locked = try scratch.run(["get", "svc"])
            #expect(locked.status == 5)
            #expect(locked.errors.contains("VAULT_KEY_FILE"))
            // VAULT_KEY_FILE, and a simulated systemd service: LoadCredential=vault.key:… puts the key in
            // $CREDENTIALS_DIRECTORY/vault.key.
            #expect(try scratch.run(["get", "svc"], environment: ["VAULT_KEY_FILE": keyFile]).text == "v")
            #expect(try scratch.run(["get", "svc"], environment: ["CREDENTIALS_DIRECTORY": credentials]).text == "v")
        }
    }

    /// A wrong key is access denied (4), as a wrong passphrase is: another vault's key file, and the key
    /// file a `rekey --new-key-file` left behind.
    @Test func aWrongKeyFileIsAccessDenied() throws {
        try withScratch { scratch in
            let keyFile = scratch.root + "/vault.key"
            let newKeyFile = scratch.root + "/new.key"
            #expect(try scratch.run(["init", "--key-file", keyFile]).status == 0)
            #expect(try scratch.run(["--key-file", keyFile, "rekey", "--new-key-file", newKeyFile]).status == 0)
            let stale = try scratch.run(["--key-file", keyFile, "ls"])
            #expect(stale.status == 4, "\(stale.errors)")
            #expect(stale.errors.contains("the key in \(keyFile) does not open the vault at \(scratch.vault)"))
            #expect(stale.errors.contains("give this vault's key file"))
            #expect(try scratch.run(["--key-file", newKeyFile, "ls"]).status == 0)
        }
    }

    /// A `--passphrase-fd` that is not open is the command line's mistake: a usage error (2).
    @Test func aClosedPassphraseDescriptorIsAUsageError() throws {
        try withScratch { scratch in
            let result = try scratch.run(["init", "--passphrase", "--passphrase-fd", "9"])
            #expect(result.status == 2, "\(result.errors)")
            #expect(result.errors.contains("--passphrase-fd 9: file descriptor 9 is not open"))
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/VAULT"))
        }
    }
}

@Suite struct UnlockCLITests {
    @Test func unlockInOneProcessGetInAnotherLockFromAThird() throws {
        try withScratch { scratch in
            defer {
                _ = try? scratch.run(["lock"])
            }
            #expect(
                try scratch.run(
                    ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("pw\n")
                )
                .status == 0)
            let unlock = try scratch.run(["unlock", "--timeout", "5m", "--passphrase-fd", "0"], input: Data("pw\n"))
            #expect(unlock.status == 0, "\(unlock.errors)")
            #expect(try scratch.run(["put", "svc"], input: Data("v")).status == 0)
            #expect(try scratch.run(["get", "svc"]).text == "v")
            #expect(try scratch.run(["uuid"]).status == 0)  // AfterFirstUnlockThisDeviceOnly
            #expect(try scratch.run(["lock"]).status == 0)
            // The CLI's items are WhenUnlocked (Apple's default): locked again; the AfterFirstUnlock
            // identifier stays readable until reboot.
            #expect(try scratch.run(["get", "svc"]).status == 5)
            #expect(try scratch.run(["uuid"]).status == 0)
            #expect(try scratch.run(["unlock", "--timeout", "soon"]).status == 2)
        }
    }
}

@Suite struct BackupCLITests {
    @Test func exportAndImportEndToEnd() throws {
        try withScratch(initialized: true) { scratch in
            #expect(try scratch.run(["put", "svc", "acct"], input: Data("secret")).status == 0)
            #expect(try scratch.run(["uuid"]).status == 0)  // a …ThisDeviceOnly item, left out
            let backup = scratch.root + "/backup"
            let export = try scratch.run(
                ["export", "--kdf-cost", "minimum", "--passphrase-fd", "0", backup], input: Data("backup pw\n"))
            #expect(export.status == 0, "\(export.errors)")
            #expect(export.errors.contains("exported 1 item to") && export.errors.contains("left out 1"))
            let other = scratch.root + "/other"
            #expect(try scratch.run(["--vault", other, "init"], vaultOption: false).status == 0)
            let imported = try scratch.run(
                ["--vault", other, "import", "--passphrase-fd", "0", backup], input: Data("backup pw\n"),
                vaultOption: false
            )
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(try scratch.run(["--vault", other, "get", "svc", "acct"], vaultOption: false).text == "secret")
            let again = try scratch.run(
                ["--vault", other, "import", "--passphrase-fd", "0", backup], input: Data("backup pw\n"),
                vaultOption: false
            )
            #expect(again.status == 3)
            #expect(again.errors.contains("--replace"))
            let wrong = try scratch.run(
                ["--vault", other, "import", "--passphrase-fd", "0", backup], input: Data("nope\n"), vaultOption: false)
            #expect(wrong.status == 4)
        }
    }
}
