import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultCLI

/// The operator's path: rotating a key file, unattended backups, init without a terminal, getting rid
/// of damaged items, and what `lock` and `unlock` leave in the kernel keyring.
@Suite struct OperatorTests {
    func mode(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    // MARK: Rekey of a key-file vault

    /// Before: `vault rekey` refused every vault whose key is in an external file.
    @Test func aKeyFileVaultIsRekeyedToANewKeyFile() throws {
        try withScratch { scratch in
            let oldKey = scratch.root + "/old.key"
            let newKey = scratch.root + "/new.key"
            try #require(scratch.run(["init", "--key-file", oldKey]).status == 0)
            try #require(scratch.run(["--key-file", oldKey, "put", "svc", "acct"], input: Data("kept")).status == 0)
            // Without --new-key-file: told what to give, nothing changes.
            let bare = try scratch.run(["--key-file", oldKey, "rekey"])
            #expect(bare.status == 2 && bare.errors.contains("--new-key-file"), "\(bare.errors)")
            // A new key file that others can read is refused.
            _ = FileManager.default.createFile(
                atPath: newKey, contents: Data(repeating: 1, count: 32), attributes: [.posixPermissions: 0o644])
            let unsafe = try scratch.run(["--key-file", oldKey, "rekey", "--new-key-file", newKey])
            #expect(unsafe.status == 4 && unsafe.errors.contains("chmod 600"), "\(unsafe.errors)")
            try FileManager.default.removeItem(atPath: newKey)

            let rekey = try scratch.run(["--key-file", oldKey, "rekey", "--new-key-file", newKey])
            #expect(rekey.status == 0, "\(rekey.errors)")
            #expect(rekey.errors.contains("only \(newKey) opens it now"), "\(rekey.errors)")
            #expect(try mode(newKey) == 0o600)
            #expect(try Data(contentsOf: URL(fileURLWithPath: newKey)).count == 32)
            #expect(try scratch.run(["--key-file", newKey, "get", "svc", "acct"]).text == "kept")
            let old = try scratch.run(["--key-file", oldKey, "get", "svc", "acct"])
            #expect(old.status == 4 && old.errors.contains("--new-key-file"), "\(old.errors)")

            // As a systemd service sees it: LoadCredential=vault.key:… in $CREDENTIALS_DIRECTORY, then the
            // unit pointed at the new file and restarted.
            let before = scratch.root + "/credentials-before"
            let after = scratch.root + "/credentials-after"
            for directory in [before, after] {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            }
            try FileManager.default.copyItem(atPath: newKey, toPath: before + "/vault.key")
            let service = try scratch.run(
                ["rekey", "--new-key-file", after + "/vault.key"], environment: ["CREDENTIALS_DIRECTORY": before])
            #expect(service.status == 0, "\(service.errors)")
            #expect(
                try scratch.run(["get", "svc", "acct"], environment: ["CREDENTIALS_DIRECTORY": after]).text == "kept")
        }
    }

    /// A vault of master.key rekeys as before, with and without a passphrase.
    @Test func masterKeyVaultsStillRekey() throws {
        try withScratch(initialized: true) { plain in
            try #require(plain.run(["put", "svc"], input: Data("plain")).status == 0)
            let key = try Data(contentsOf: URL(fileURLWithPath: plain.vault + "/master.key"))
            #expect(try plain.run(["rekey"]).status == 0)
            #expect(try Data(contentsOf: URL(fileURLWithPath: plain.vault + "/master.key")) != key)
            #expect(try plain.run(["get", "svc"]).text == "plain")
            let stray = try plain.run(["rekey", "--new-key-file", plain.root + "/k"])
            #expect(stray.status == 2 && stray.errors.contains("--key-file"), "\(stray.errors)")
            #expect(!FileManager.default.fileExists(atPath: plain.root + "/k"))

            try withScratch { wrapped in
                let initialized = try wrapped.run(
                    ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("one\n"))
                try #require(initialized.status == 0, "\(initialized.errors)")
                try #require(
                    try wrapped.shell(#"printf wrapped | "$V" --vault "$D" put svc --passphrase-fd 3 3<<< one"#).status
                        == 0)
                let rekey = try wrapped.run(
                    ["rekey", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("one\ntwo\n"))
                #expect(rekey.status == 0, "\(rekey.errors)")
                #expect(
                    try wrapped.run(["get", "svc", "--passphrase-fd", "0"], input: Data("two\n")).text == "wrapped")
                #expect(try wrapped.run(["get", "svc", "--passphrase-fd", "0"], input: Data("one\n")).status == 4)
            }
        }
    }

    // MARK: Unattended backups

    /// Before: export and import took a FILE only, and a passphrase only.
    @Test func exportToStandardOutputAndImportFromStandardInput() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("streamed")).status == 0)
            let other = scratch.root + "/other"
            try #require(scratch.run(["--vault", other, "init"], vaultOption: false).status == 0)
            try Data("backup pass\n").write(to: URL(fileURLWithPath: scratch.root + "/pass"))
            let pipe = try scratch.shell(
                #"set -o pipefail; "$V" --vault "$D" export - --kdf-cost minimum --passphrase-fd 3 3<"$P" | "#
                    + #"tee "$B" | "$V" --vault "$O" import - --passphrase-fd 3 3<"$P""#,
                environment: ["O": other, "P": scratch.root + "/pass", "B": scratch.root + "/copy"])
            #expect(pipe.status == 0, "\(pipe.errors)")
            #expect(pipe.errors.contains("to standard output") && pipe.errors.contains("from standard input"))
            #expect(try scratch.run(["--vault", other, "get", "svc", "acct"], vaultOption: false).text == "streamed")
            // What went through the pipe is a backup file like any other.
            let copy = try Data(contentsOf: URL(fileURLWithPath: scratch.root + "/copy"))
            #expect(copy.prefix(4) == Data("VLTX".utf8))
            // The backup comes on standard input, so the passphrase may not.
            let clash = try scratch.run(["import", "-", "--passphrase-fd", "0"], input: copy)
            #expect(clash.status == 2 && clash.errors.contains("another descriptor"), "\(clash.errors)")
            // Standard output may be a file too.
            let toFile = try scratch.run(
                ["export", "-", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("x\n"))
            #expect(toFile.status == 0 && toFile.output.prefix(4) == Data("VLTX".utf8), "\(toFile.errors)")
        }
    }

    /// A stream that is no backup, or asks for too much Argon2id work, is refused on its header: the
    /// writer behind it is still running (it would block a command that read to the end).
    @Test func importFromStandardInputChecksTheHeaderBeforeReadingTheRest() throws {
        try withScratch(initialized: true) { scratch in
            let garbage = try scratch.shell(
                #"exec 3< <(head -c 100 /dev/zero; exec sleep 20); w=$!; timeout -s KILL 10 "$V" --vault "$D" import - <&3; "#
                    + #"echo "status=$?" >&2; kill -KILL $w"#)
            #expect(garbage.errors.contains("status=6"), "\(garbage.errors)")
            #expect(garbage.errors.contains("standard input is not a vault backup"), "\(garbage.errors)")
            // A header asking for 2 GiB of Argon2id memory (VLTX, version 1, Argon2id, XChaCha20-Poly1305).
            var header = Data("VLTX".utf8) + Data([1, 1, 1, 0, 0, 0, 0, 4])
            header += Data([0, 0, 0, 0, 0x80, 0, 0, 0]) + Data(repeating: 0, count: 40)
            try header.write(to: URL(fileURLWithPath: scratch.root + "/costly"))
            let costly = try scratch.shell(
                #"exec 3< <(cat "$H"; exec sleep 20); w=$!; timeout -s KILL 10 "$V" --vault "$D" import - <&3; "#
                    + #"echo "status=$?" >&2; kill -KILL $w"#,
                environment: ["H": scratch.root + "/costly"])
            #expect(costly.errors.contains("status=2"), "\(costly.errors)")
            #expect(costly.errors.contains("ceiling"), "\(costly.errors)")
        }
    }

    /// Before: `vault import -` held the whole backup, its plaintext and its items in memory (475 MiB for
    /// a 96 MB backup). A backup is now a secret stream read a message at a time from a file without a
    /// name in the vault's directory: the peak does not grow with the backup.
    @Test func importFromAStreamTakesMemoryThatDoesNotGrowWithTheBackup() throws {
        try withScratch(initialized: true) { scratch in
            let key = scratch.root + "/backup.key"
            try #require(
                FileManager.default.createFile(
                    atPath: key, contents: Data(repeating: 5, count: 32), attributes: [.posixPermissions: 0o600]))
            let secret = Data(repeating: 0x61, count: 2 << 20)
            var peaks: [Int] = []
            var sizes: [Int] = []
            for (count, name) in [(6, "small"), (30, "large")] {
                let source = scratch.root + "/\(name)-source"
                try #require(scratch.run(["--vault", source, "init"], vaultOption: false).status == 0)
                for index in 0..<count {
                    let put = try scratch.run(
                        ["--vault", source, "put", "s\(index)"], input: secret, vaultOption: false)
                    try #require(put.status == 0, "\(put.errors)")
                }
                let backup = scratch.root + "/\(name).backup"
                let export = try scratch.run(
                    ["--vault", source, "export", "--backup-key-file", key, backup], vaultOption: false)
                try #require(export.status == 0, "\(export.errors)")
                let target = scratch.root + "/\(name)-target"
                try #require(scratch.run(["--vault", target, "init"], vaultOption: false).status == 0)
                // The child's peak resident set, as the kernel counts it (in KiB).
                let measured = try scratch.shell(
                    #"python3 -c 'import os, resource, subprocess, sys; "#
                        + #"r = subprocess.run(sys.argv[1:], stdin=open(os.environ["BACKUP"], "rb")); "#
                        + #"print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "#
                        + #""$V" --vault "$TARGET" import --backup-key-file "$KEY" -"#,
                    environment: ["BACKUP": backup, "TARGET": target, "KEY": key])
                let fields = measured.text.split(separator: " ").compactMap {
                    Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
                }
                try #require(fields.count == 2 && fields[0] == 0, "\(measured.text) \(measured.errors)")
                peaks.append(fields[1] * 1024)
                sizes.append(try FileManager.default.attributesOfItem(atPath: backup)[.size] as? Int ?? 0)
                #expect(
                    try scratch.run(["--vault", target, "get", "s\(count - 1)"], vaultOption: false).output == secret)
            }
            // 48 MB more of backup: the peak grows by far less than that, and stays below the backup's size
            // (before: about five times it).
            #expect(peaks[1] - peaks[0] < 12 << 20, "peaks \(peaks) for backups of \(sizes) bytes")
            #expect(peaks[1] < sizes[1], "peaks \(peaks) for backups of \(sizes) bytes")
        }
    }

    /// The 1 GiB limit on standard input, at a smaller size (the same code path).
    @Test func theRestOfAStreamIsReadWithinALimit() throws {
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        let writer = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
        writer.write(Data(repeating: 7, count: 5000))
        try writer.close()
        let reader = FileDescriptor(rawValue: fds[0])
        defer { try? reader.close() }
        do {
            _ = try ImportCommand.readRest(reader, limit: 4096, name: "standard input")
            Issue.record("read more than the limit")
        } catch {
            #expect(error.message.contains("more than"), "\(error.message)")
        }
    }

    /// For cron: a backup sealed under a key file, no passphrase asked.
    @Test func aBackupSealedUnderABackupKeyFile() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("cron")).status == 0)
            let key = scratch.root + "/backup.key"
            let backup = scratch.root + "/backup"
            let missing = try scratch.run(["export", backup, "--backup-key-file", key])
            #expect(missing.status == 7 && missing.errors.contains("head -c 32 /dev/urandom"), "\(missing.errors)")
            _ = FileManager.default.createFile(
                atPath: key, contents: Data((0..<32).map { UInt8($0 * 7) }), attributes: [.posixPermissions: 0o644])
            #expect(try scratch.run(["export", backup, "--backup-key-file", key]).status == 4)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
            // No terminal and no --passphrase-fd: nothing may ask for a passphrase.
            let export = try scratch.run(["export", backup, "--backup-key-file", key])
            #expect(export.status == 0, "\(export.errors)")
            let sealed = try Data(contentsOf: URL(fileURLWithPath: backup))
            #expect(sealed[5] == 2, "the key derivation byte of a key-file backup")
            #expect(!sealed.contains(Data("cron".utf8)))

            let other = scratch.root + "/other"
            try #require(scratch.run(["--vault", other, "init"], vaultOption: false).status == 0)
            let withoutKey = try scratch.run(["--vault", other, "import", backup], vaultOption: false)
            #expect(withoutKey.status == 2 && withoutKey.errors.contains("--backup-key-file"), "\(withoutKey.errors)")
            let otherKey = scratch.root + "/other.key"
            _ = FileManager.default.createFile(
                atPath: otherKey, contents: Data(repeating: 9, count: 32), attributes: [.posixPermissions: 0o600])
            let wrongKey = try scratch.run(
                ["--vault", other, "import", backup, "--backup-key-file", otherKey], vaultOption: false)
            #expect(wrongKey.status == 4 && wrongKey.errors.contains("another key file"), "\(wrongKey.errors)")
            let imported = try scratch.run(
                ["--vault", other, "import", backup, "--backup-key-file", key], vaultOption: false)
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(try scratch.run(["--vault", other, "get", "svc", "acct"], vaultOption: false).text == "cron")
            // And on a stream, both ways.
            let third = scratch.root + "/third"
            try #require(scratch.run(["--vault", third, "init"], vaultOption: false).status == 0)
            let streamed = try scratch.shell(
                #"set -o pipefail; "$V" --vault "$D" export - --backup-key-file "$K" | "#
                    + #""$V" --vault "$T" import - --backup-key-file "$K""#,
                environment: ["K": key, "T": third])
            #expect(streamed.status == 0, "\(streamed.errors)")
            #expect(try scratch.run(["--vault", third, "get", "svc", "acct"], vaultOption: false).text == "cron")
            // A passphrase backup is not opened with a key file.
            let passBackup = scratch.root + "/pass-backup"
            #expect(
                try scratch.run(
                    ["export", passBackup, "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("p\n")
                )
                .status == 0)
            let mismatch = try scratch.run(["import", passBackup, "--backup-key-file", key])
            #expect(mismatch.status == 2 && mismatch.errors.contains("sealed under a passphrase"), "\(mismatch.errors)")
        }
    }

    // MARK: init without a terminal

    /// Before: the prompt failed after the directory and `.lock` were made ("locked", exit 5), and they
    /// stayed.
    @Test func initWithAPassphraseButNoTerminalLeavesNothing() throws {
        try withScratch { scratch in
            // setsid: a new session has no controlling terminal, whatever the test runner has.
            let run = try scratch.shell(#"setsid -w "$V" --vault "$D" init --passphrase < /dev/null"#)
            #expect(run.status == 2, "\(run.status): \(run.errors)")
            #expect(run.errors.contains("needs a terminal or --passphrase-fd"), "\(run.errors)")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault))
            let nested = scratch.root + "/a/b/vault"
            let deep = try scratch.shell(
                #"setsid -w "$V" --vault "$N" init --passphrase < /dev/null"#, environment: ["N": nested])
            #expect(deep.status == 2)
            #expect(!FileManager.default.fileExists(atPath: scratch.root + "/a"))
        }
    }

    // MARK: Damaged items

    /// A vault with items `one`, `two`, `three`, `four`; flips a byte in the files of `damaged`.
    /// Runs `body` with a fresh vault holding "one", "two" and "three", those in `damaged` damaged, and
    /// their files' paths; the vault goes when `body` ends.
    func withVault<R>(damaging damaged: [String], _ body: (Scratch, [String: String]) throws -> R) throws -> R {
        let (scratch, files) = try vault(damaging: damaged)
        defer { scratch.remove() }
        return try body(scratch, files)
    }

    func vault(damaging damaged: [String]) throws -> (scratch: Scratch, files: [String: String]) {
        let scratch = try Scratch.initialized()
        let group = scratch.vault + "/groups/vault"
        var files: [String: String] = [:]
        for service in ["one", "two", "three", "four"] {
            let before = Set((try? FileManager.default.contentsOfDirectory(atPath: group)) ?? [])
            try #require(scratch.run(["put", service], input: Data("secret-\(service)")).status == 0)
            let after = Set(try FileManager.default.contentsOfDirectory(atPath: group))
            files[service] = group + "/" + (try #require(after.subtracting(before).first { $0.hasSuffix(".item") }))
        }
        for service in damaged {
            let path = files[service]!
            var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
            bytes[bytes.count - 3] ^= 0x40
            try bytes.write(to: URL(fileURLWithPath: path))
        }
        return (scratch, files)
    }

    /// Before: a damaged item could be neither removed (exit 6) nor overwritten (exit 6).
    @Test func aDamagedItemIsRemovedByRmAndReplacedByPut() throws {
        try withVault(damaging: ["one", "two"]) { scratch, files in
            let rm = try scratch.run(["rm", "one"])
            #expect(rm.status == 0, "\(rm.errors)")
            #expect(rm.errors.contains(files["one"]!) && rm.errors.contains("removed the damaged item file"))
            #expect(!FileManager.default.fileExists(atPath: files["one"]!))
            #expect(try scratch.run(["get", "one"]).status == 1)
            #expect(try scratch.run(["rm", "one"]).status == 1)

            let put = try scratch.run(["put", "two"], input: Data("renewed"))
            #expect(put.status == 0, "\(put.errors)")
            #expect(put.errors.contains("removed the damaged item file"), "\(put.errors)")
            #expect(try scratch.run(["get", "two"]).text == "renewed")
            // `add` still refuses to touch it.
            try withVault(damaging: ["one"]) { other, _ throws in
                #expect(try other.run(["add", "one"], input: Data("x")).status == 6)
            }
            #expect(try scratch.run(["check"]).status == 0)
        }
    }

    /// Before: check only named the damaged files.
    @Test func checkRemovesDamagedFilesAndSaysHow() throws {
        try withVault(damaging: ["one", "three"]) { scratch, files in
            let check = try scratch.run(["check"])
            #expect(check.status == 6)
            let summary = try #require(check.errors.split(separator: "\n").last)
            #expect(summary.contains("vault check --remove-damaged") && summary.contains("vault rm"), "\(summary)")
            let help = try scratch.run(["check", "--help"])
            #expect(help.text.contains("--remove-damaged") && help.text.contains("vault rm"))

            let repair = try scratch.run(["check", "--remove-damaged", "--json"])
            #expect(repair.status == 0, "\(repair.errors)")
            let report = try #require(try repair.json() as? [String: Any])
            #expect(Set(report["removed"] as? [String] ?? []) == [files["one"]!, files["three"]!])
            // Listed (as a check lists them), then removed.
            for name in ["one", "three"] { #expect(repair.errors.contains(files[name]!)) }
            #expect(repair.errors.contains("removed 2 damaged"), "\(repair.errors)")
            #expect(try scratch.run(["check"]).status == 0)
            #expect(try scratch.run(["get", "two"]).text == "secret-two")
            #expect(try scratch.run(["get", "one"]).status == 1)
        }
    }

    /// Locked is not damaged: without the passphrase neither rm nor check --remove-damaged touch a file.
    @Test func lockedItemsAreNeverRemoved() throws {
        try withScratch { scratch in
            try #require(
                scratch.run(
                    ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("p\n")
                )
                .status == 0)
            try #require(
                try scratch.shell(#"printf s | "$V" --vault "$D" put svc --passphrase-fd 3 3<<< p"#).status == 0)
            let group = scratch.vault + "/groups/vault"
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: group).first { $0.hasSuffix(".item") })
            let check = try scratch.run(["check", "--remove-damaged"], input: Data())
            #expect(check.status == 5, "\(check.errors)")
            #expect(try scratch.run(["rm", "svc"]).status == 5)
            #expect(FileManager.default.fileExists(atPath: group + "/" + file))
            #expect(try scratch.run(["get", "svc", "--passphrase-fd", "0"], input: Data("p\n")).text == "s")
        }
    }

    // MARK: Locks and keys

    /// `lock --all` and `unlock` of a vault without a passphrase, run in a user namespace of their own:
    /// its user keyring is not the one that other tests (and other processes of this user) use.
    @Test func lockAllDropsEveryVaultsKeysAndUnlockOfAPlainVaultCachesNothing() throws {
        try withScratch { scratch in
            let probe = try scratch.shell("unshare -U -r true")
            guard probe.status == 0 else {
                print("SKIP lockAllDropsEveryVaultsKeys…: no user namespace (\(probe.errors))")
                return
            }
            let script = #"""
                set -u
                id() { od -An -tx1 -j8 -N16 "$1/VAULT" | tr -d ' \n'; }
                live() { grep "vault:$1:$2" /proc/keys | awk '$2 !~ /i/' | wc -l; }
                for v in a b; do printf 'p\n' | "$V" --vault "$R/$v" init --passphrase --kdf-cost minimum --passphrase-fd 0; done
                printf s | "$V" --vault "$R/b" put svc --passphrase-fd 3 3<<< p
                "$V" --vault "$R/b" uuid --passphrase-fd 3 3<<< p >/dev/null
                for v in a b; do printf 'p\n' | "$V" --vault "$R/$v" unlock --passphrase-fd 0; done
                A=$(id "$R/a"); B=$(id "$R/b")
                echo "unlocked a: $(live $A afu) $(live $A wu) b: $(live $B afu) $(live $B wu)"
                "$V" --vault "$R/b" lock; echo "lock: $?"
                "$V" --vault "$R/b" uuid >/dev/null; echo "uuid after lock: $?"
                rm -rf "$R/a"
                "$V" --vault "$R/nowhere" lock --all; echo "lock --all: $?"
                echo "after a: $(live $A afu) $(live $A wu) b: $(live $B afu) $(live $B wu)"
                "$V" --vault "$R/b" uuid >/dev/null; echo "uuid after lock --all: $?"
                "$V" --vault "$R/plain" init
                P=$(id "$R/plain")
                "$V" --vault "$R/plain" unlock; echo "unlock plain: $?"
                echo "plain: $(live $P afu) $(live $P wu)"
                """#
            // setsid: no controlling terminal, so that a locked vault says so instead of prompting.
            let run = try scratch.shell(
                #"setsid -w unshare -U -r bash -c "$S""#, environment: ["S": script, "R": scratch.root])
            let lines = run.text.split(separator: "\n").map(String.init)
            #expect(lines.contains("unlocked a: 1 1 b: 1 1"), "\(run.text) \(run.errors)")
            #expect(lines.contains("lock: 0") && lines.contains("uuid after lock: 0"), "\(run.text)")
            #expect(lines.contains("lock --all: 0"), "\(run.text) \(run.errors)")
            #expect(lines.contains("after a: 0 0 b: 0 0"), "\(run.text)")
            #expect(lines.contains("uuid after lock --all: 5"), "\(run.text)")
            #expect(lines.contains("unlock plain: 0") && lines.contains("plain: 0 0"), "\(run.text)")
            #expect(run.errors.contains("nothing to unlock"), "\(run.errors)")
        }
    }

    @Test func lockHelpSaysWhatStaysUnlocked() throws {
        try withScratch { scratch in
            let help = try scratch.run(["lock", "--help"], vaultOption: false).text
            #expect(!help.contains("the next process needs the passphrase again"))
            for phrase in ["AfterFirstUnlock", "until", "reboot", "Always", "--all"] {
                #expect(help.contains(phrase), "\(phrase)")
            }
            let unlock = try scratch.run(["unlock", "--help"], vaultOption: false).text
            #expect(unlock.contains("maxkeys") && unlock.contains("nothing to unlock"))
        }
    }
}
