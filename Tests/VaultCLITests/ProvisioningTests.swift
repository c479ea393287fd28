import Foundation
import Testing
import VaultTestSupport

/// What an operator provisioning secrets for a service needs (README: "A service and its secrets").
@Suite struct ProvisioningTests {
    /// Before: a secret put for the service was invisible to the CLI's default identity, which printed
    /// nothing and said nothing.
    @Test func aMissNamesTheGroupsThatHoldItemsButNoItems() throws {
        try withScratch(initialized: true) { scratch in
            try #require(
                scratch.run(["--app", "my-service", "put", "db-main", "app-user"], input: Data("s")).status == 0)
            let get = try scratch.run(["get", "other-svc", "x"])
            #expect(get.status == 1)
            #expect(get.errors.contains("my-service") && get.errors.contains("--app"), "\(get.errors)")
            let ls = try scratch.run(["ls"])
            #expect(ls.status == 0 && ls.text.isEmpty)
            #expect(ls.errors.contains("group my-service holds items"), "\(ls.errors)")
            for leak in ["db-main", "app-user", "1 item"] {
                #expect(!get.errors.contains(leak) && !ls.errors.contains(leak), "\(leak) leaked")
            }
            // With the right identity there is nothing to explain.
            let right = try scratch.run(["--app", "my-service", "ls"])
            #expect(right.errors.isEmpty && right.text.contains("db-main"))
        }
    }

    /// Before: `get --server mail.example alice` said only "not found" for an item under imaps:993.
    @Test func aMissNamesNearMatches() throws {
        try withScratch(initialized: true) { scratch in
            let put = try scratch.run(
                ["put", "--server", "mail.example", "--protocol", "imaps", "--port", "993", "alice"], input: Data("pw"))
            try #require(put.status == 0)
            let get = try scratch.run(["get", "--server", "mail.example", "alice"])
            #expect(get.status == 1)
            #expect(
                get.errors.contains("vault get --server mail.example --protocol imaps --port 993 alice"),
                "\(get.errors)")
            try #require(scratch.run(["put", "db", "app"], input: Data("pw")).status == 0)
            let generic = try scratch.run(["get", "db", "ap"])
            #expect(generic.errors.contains("vault get db app"), "\(generic.errors)")
        }
    }

    /// A mistyped path under a production key must not get a fresh vault.
    @Test func readsAndAnExternalKeyNeverCreateAVault() throws {
        try withScratch { scratch in
            let get = try scratch.run(["get", "svc"])
            #expect(get.status == 8)
            #expect(!FileManager.default.fileExists(atPath: scratch.vault))
            let key = scratch.root + "/vault.key"
            try Data(repeating: 9, count: 32).write(to: URL(fileURLWithPath: key))
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)
            let put = try scratch.run(["--key-file", key, "put", "svc"], input: Data("s"))
            #expect(put.status == 8, "\(put.errors)")
            #expect(put.errors.contains(scratch.vault))
            #expect(!FileManager.default.fileExists(atPath: scratch.vault))
        }
    }

    /// Before: `init --key-file /etc/vault/k` without /etc/vault failed with an I/O error (exit 7).
    @Test func aMissingKeyDirectoryIsNamedWithItsFix() throws {
        try withScratch { scratch in
            let init_ = try scratch.run(["init", "--key-file", scratch.root + "/etc-vault/service.key"])
            #expect(init_.status == 8, "\(init_.status) \(init_.errors)")
            #expect(init_.errors.contains("install -d -m 0700 \(scratch.root)/etc-vault"), "\(init_.errors)")
        }
    }

    /// Before: root's put into a service's vault left root-owned 0600 files the service could not read,
    /// and the advice for a key file of another user was a `chown` that broke the owner's vault.
    @Test func rootProvisionsAServiceVaultAsItsOwner() throws {
        guard getuid() == 0 else {
            print("SKIP rootProvisionsAServiceVaultAsItsOwner: needs root (useradd, runuser)")
            return
        }
        let user = "vault-op-\(getpid())"
        try #require(shell("useradd --system --no-create-home --shell /usr/sbin/nologin \(user)").status == 0)
        defer { _ = try? shell("userdel \(user)") }
        try withScratch { scratch in
            let state = scratch.root + "/state"
            try #require(
                shell("chmod 755 \(scratch.root) && install -d -o \(user) -g \(user) -m 0700 \(state)").status == 0)
            let vault = state + "/vault"
            let key = scratch.root + "/service.key"
            try #require(scratch.run(["--vault", vault, "init", "--key-file", key], vaultOption: false).status == 0)
            let put = try scratch.run(
                ["--vault", vault, "--key-file", key, "--app", "my-service", "put", "db", "app"], input: Data("pw"),
                vaultOption: false)
            try #require(put.status == 0, "\(put.errors)")
            let strangers = try shell("find \(vault) ! -user \(user)")
            #expect(strangers.text.isEmpty, "not the service's: \(strangers.text)")
            #expect(try shell("stat -c %U \(key)").text == "root\n")
            // The service reads it with its own copy of the key (as LoadCredential= gives it).
            try #require(shell("install -o \(user) -m 0400 \(key) \(scratch.root)/service-copy.key").status == 0)
            let read = try shell(
                "runuser -u \(user) -- \(vaultExecutable.path) --vault \(vault) --key-file \(scratch.root)/service-copy.key "
                    + "--app my-service get db app")
            #expect(read.text == "pw", "\(read.errors)")
            // Another user is refused with the command that works, not with a chown.
            let other = try shell("runuser -u nobody -- \(vaultExecutable.path) --vault \(vault) ls")
            #expect(other.status == 4)
            #expect(other.errors.contains("runuser -u \(user) -- vault"), "\(other.errors)")
            #expect(!other.errors.contains("chown"), "\(other.errors)")
        }
    }

    /// Before: root acting as a service's owner opened `export`'s output and `--backup-key-file` as the
    /// owner, so a backup key only root can read, and a backup directory only root can write, could not
    /// be used. Root opens those first when no other user owns a directory on the way; a path through the
    /// owner's own directory is still opened as the owner, who could point it anywhere.
    @Test func rootBacksUpAServiceVaultWithItsOwnKeyAndDirectory() throws {
        guard getuid() == 0 else {
            print("SKIP rootBacksUpAServiceVaultWithItsOwnKeyAndDirectory: needs root (useradd)")
            return
        }
        let user = "vault-bk-\(getpid())"
        try #require(shell("useradd --system --no-create-home --shell /usr/sbin/nologin \(user)").status == 0)
        defer { _ = try? shell("userdel \(user)") }
        try withScratch { scratch in
            let state = scratch.root + "/state"
            let backups = scratch.root + "/backups"
            let key = scratch.root + "/backup.key"
            try #require(
                shell(
                    "chmod 755 \(scratch.root) && install -d -o \(user) -g \(user) -m 0700 \(state) "
                        + "&& install -d -m 0700 \(backups) && head -c 32 /dev/urandom > \(key) && chmod 600 \(key)"
                ).status == 0)
            let vault = state + "/vault"
            for arguments in [["init"], ["--app", "svc", "put", "db", "app"]] {
                let run = try scratch.run(["--vault", vault] + arguments, input: Data("pw"), vaultOption: false)
                try #require(run.status == 0, "\(run.errors)")
            }
            let export = try scratch.run(
                ["--vault", vault, "export", "--backup-key-file", key, backups + "/b1"], vaultOption: false)
            #expect(export.status == 0, "\(export.errors)")
            #expect(try shell("stat -c '%U %a' \(backups)/b1").text == "root 600\n")

            let restored = state + "/restored"
            try #require(scratch.run(["--vault", restored, "init"], vaultOption: false).status == 0)
            let imported = try scratch.run(
                ["--vault", restored, "import", "--backup-key-file", key, backups + "/b1"], vaultOption: false)
            #expect(imported.status == 0, "\(imported.errors)")
            let read = try scratch.run(["--vault", restored, "--app", "svc", "get", "db", "app"], vaultOption: false)
            #expect(read.text == "pw", "\(read.errors)")

            // Into the owner's own directory: made as the owner, as before.
            let own = try scratch.run(
                ["--vault", vault, "export", "--backup-key-file", key, state + "/b2"], vaultOption: false)
            #expect(own.status == 0, "\(own.errors)")
            #expect(try shell("stat -c %U \(state)/b2").text == "\(user)\n")
            // A relative path from the owner's directory, and a root directory the owner's group may write:
            // the owner's too.
            let relative = try shell(
                "cd \(state) && \(vaultExecutable.path) --vault \(vault) export --backup-key-file \(key) b3")
            #expect(relative.status == 0, "\(relative.errors)")
            #expect(try shell("stat -c %U \(state)/b3").text == "\(user)\n")
            try #require(shell("install -d -g \(user) -m 0770 \(scratch.root)/shared-backups").status == 0)
            let shared = try scratch.run(
                ["--vault", vault, "export", "--backup-key-file", key, scratch.root + "/shared-backups/b4"],
                vaultOption: false)
            #expect(shared.status == 0, "\(shared.errors)")
            #expect(try shell("stat -c %U \(scratch.root)/shared-backups/b4").text == "\(user)\n")
            // An existing file is never overwritten.
            let again = try scratch.run(
                ["--vault", vault, "export", "--backup-key-file", key, backups + "/b1"], vaultOption: false)
            #expect(again.status == 3 && again.errors.contains("never overwrites"), "\(again.errors)")
        }
    }

    /// Before: a user's symlink on the way to a root-owned vault made root act as root there (the owner
    /// was looked up after the link), so the user steered root's writes into the system vault.
    @Test func aUsersSymlinkOnTheWayMakesRootActAsThatUser() throws {
        guard getuid() == 0 else {
            print("SKIP aUsersSymlinkOnTheWayMakesRootActAsThatUser: needs root")
            return
        }
        try withScratch { scratch in
            let rootVault = scratch.root + "/root-owned/vault"
            try #require(
                shell("chmod 755 \(scratch.root) && install -d -m 0700 \(scratch.root)/root-owned").status == 0)
            try #require(scratch.run(["--vault", rootVault, "init"], vaultOption: false).status == 0)
            let home = scratch.root + "/home-nobody"
            try #require(
                shell("install -d -o nobody -m 0755 \(home) && ln -s \(scratch.root)/root-owned \(home)/secrets").status
                    == 0)
            try #require(shell("chown -h nobody \(home)/secrets").status == 0)
            let put = try scratch.run(
                ["--vault", home + "/secrets/vault", "put", "planted"], input: Data("x"), vaultOption: false)
            #expect(put.status != 0, "root wrote through nobody's symlink: \(put.errors)")
            #expect(try scratch.run(["--vault", rootVault, "ls"], vaultOption: false).text.isEmpty)
        }
    }

    func shell(_ command: String) throws -> RunResult {
        try runVault(
            ["-c", command], input: Data(), environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], scratch: "/tmp",
            executable: URL(fileURLWithPath: "/bin/bash"))
    }
}
