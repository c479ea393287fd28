import Foundation
import Testing
import VaultTestSupport

/// What a cron job, a service manager and an attacker did to the CLI (docs/RELIABILITY.md, "Hardening").
@Suite struct HardeningCLITests {
    static let isRoot = getuid() == 0

    /// Before: the lock file took descriptor 1, and `get` wrote the plaintext secret into `.lock`.
    @Test func closedStandardStreamsNeverReceiveAVaultFile() throws {
        try withScratch(initialized: true) { scratch in
            let secret = "closed-stdout-secret-\(UUID().uuidString)"
            try #require(scratch.run(["put", "svc", "acct"], input: Data(secret)).status == 0)
            let get = try scratch.shell(#""$V" --vault "$D" get svc acct <&- >&-; echo "status=$?" >&2"#)
            #expect(get.errors.contains("status=0"), "\(get.errors)")
            let put = try scratch.shell(#"printf other | "$V" --vault "$D" put svc2 acct >&- 2>&-; echo "status=$?""#)
            #expect(put.text.contains("status=0"), "\(put.errors)")
            for name in try FileManager.default.subpathsOfDirectory(atPath: scratch.vault) {
                let contents = FileManager.default.contents(atPath: scratch.vault + "/" + name) ?? Data()
                #expect(contents.range(of: Data(secret.utf8)) == nil, "the secret is in \(name)")
            }
            let lock = try #require(FileManager.default.contents(atPath: scratch.vault + "/.lock"))
            #expect(lock.count <= 1, "the lock file holds \(lock.count) bytes")
            #expect(try scratch.run(["get", "svc", "acct"]).text == secret)
        }
    }

    /// Before: bad bytes became U+FFFD, so two different byte strings named one item.
    @Test func anArgumentThatIsNotUTF8IsAUsageError() throws {
        try withScratch(initialized: true) { scratch in
            let put = try scratch.shell(#"printf s | "$V" --vault "$D" put "$(printf 'a\377')" acct"#)
            #expect(put.status == 2, "\(put.errors)")
            #expect(put.errors.contains("not valid UTF-8"))
            // Named as the shell counts (1 after the program; --vault and its path come first) and shown.
            #expect(put.errors.contains(#"argument 4 ("a\xFF")"#), "\(put.errors)")
            #expect(try scratch.run(["ls"]).text.isEmpty)
        }
    }

    /// A group whose `group.key` is gone (a member moved it away in a shared directory): its items are
    /// not damage to remove, and the vault's other groups and whole-vault commands go on.
    @Test func aGroupWithoutItsKeyIsNamedAndStopsNothingElse() throws {
        try withScratch(initialized: true) { scratch in
            for (group, service) in [("g1", "s1"), ("g2", "s2")] {
                try #require(scratch.run(["--group", group, "put", service], input: Data("v")).status == 0)
            }
            let key = scratch.vault + "/groups/g1/group.key"
            try FileManager.default.moveItem(atPath: key, toPath: scratch.root + "/g1.key")
            let get = try scratch.run(["--group", "g1", "get", "s1"])
            #expect(
                get.status == 6 && get.errors.contains("group.key is missing but group g1 holds items"), "\(get.errors)"
            )
            #expect(get.errors.contains("do not remove them"), "\(get.errors)")
            #expect(try scratch.run(["--group", "g2", "get", "s2"]).text == "v")
            let check = try scratch.run(["check"])
            #expect(check.status == 6 && !check.errors.contains("--remove-damaged` removes"), "\(check.errors)")
            _ = try scratch.run(["check", "--remove-damaged"])
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch.vault + "/groups/g1")
            #expect(
                left.contains { $0.hasSuffix(".item") }, "remove-damaged removed the items of a group without its key")
            #expect(try scratch.run(["group", "create", "g3"]).status == 0, "a new group is not held up by g1")
            let backupKey = scratch.root + "/backup.key"
            #expect(
                FileManager.default.createFile(
                    atPath: backupKey, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o600]))
            // A backup key file of another size is named as one, with how to make one (not a master key's words).
            let shortKey = scratch.root + "/short.key"
            #expect(
                FileManager.default.createFile(
                    atPath: shortKey, contents: Data(repeating: 7, count: 16), attributes: [.posixPermissions: 0o600]))
            let short = try scratch.run(["export", "--backup-key-file", shortKey, scratch.root + "/short"])
            #expect(short.status == 6 && short.errors.contains("the backup key file \(shortKey) is not 32 raw bytes"))
            #expect(!short.errors.contains("master key") && short.errors.contains("head -c 32"), "\(short.errors)")
            // The backup holds the other groups, names the one it left out, and says so by its status.
            let export = try scratch.run(["export", "--backup-key-file", backupKey, scratch.root + "/b"])
            #expect(export.status == 6 && !export.errors.contains("--remove-damaged"), "\(export.errors)")
            #expect(export.errors.contains("left out group g1, which the backup does not hold"), "\(export.errors)")
            let other = scratch.root + "/other"
            try #require(scratch.run(["--vault", other, "init"], vaultOption: false).status == 0)
            let imported = try scratch.run(
                ["--vault", other, "import", "--backup-key-file", backupKey, scratch.root + "/b"], vaultOption: false)
            #expect(imported.status == 0, "\(imported.errors)")
            #expect(try scratch.run(["--vault", other, "--group", "g2", "get", "s2"], vaultOption: false).text == "v")
            #expect(!FileManager.default.fileExists(atPath: other + "/groups/g1"), "the left-out group was made")
            // Put back, everything reads again.
            try FileManager.default.moveItem(atPath: scratch.root + "/g1.key", toPath: key)
            #expect(try scratch.run(["--group", "g1", "get", "s1"]).text == "v")
        }
    }

    /// A group whose `group.key` is damaged (a member can write one: rename the owner's `.lock`, 0660, to
    /// `group.key`): its items fail because of the key, not their own files, so `check --remove-damaged`
    /// and `rm` keep them, and `check` neither counts them as failing authentication nor advises removal.
    @Test func aDamagedGroupKeyNeverMakesItsItemsRemovable() throws {
        try withScratch(initialized: true) { scratch in
            for service in ["s1", "s2"] {
                try #require(scratch.run(["--group", "g1", "put", service], input: Data("v")).status == 0)
            }
            let key = scratch.vault + "/groups/g1/group.key"
            let sound = try Data(contentsOf: URL(fileURLWithPath: key))
            try Data(repeating: 0x41, count: sound.count).write(to: URL(fileURLWithPath: key))
            let check = try scratch.run(["check"])
            #expect(check.status == 6 && check.errors.contains("group.key"), "\(check.errors)")
            #expect(!check.errors.contains("--remove-damaged` removes"), "\(check.errors)")
            // Said once, for the group, not as two damaged item files.
            #expect(check.errors.components(separatedBy: "group.key").count == 2, "\(check.errors)")
            #expect(check.errors.contains("group g1 was not checked"), "\(check.errors)")
            #expect(try scratch.run(["check", "--json"]).text.contains(#""kind":"group""#))
            _ = try scratch.run(["check", "--remove-damaged"])
            let rm = try scratch.run(["--group", "g1", "rm", "s1"])
            #expect(rm.status != 0, "\(rm.errors)")
            let left = try FileManager.default.contentsOfDirectory(atPath: scratch.vault + "/groups/g1")
            #expect(left.filter { $0.hasSuffix(".item") }.count == 2, "sound items were removed: \(left)")
            try sound.write(to: URL(fileURLWithPath: key))
            #expect(try scratch.run(["--group", "g1", "get", "s1"]).text == "v")
            #expect(try scratch.run(["--group", "g1", "get", "s2"]).text == "v")
        }
    }

    /// A damaged item file (a member can plant one) leaves that file out of a backup, not its whole
    /// group: the group's other items are backed up, the file is named, and the status says the backup
    /// is not whole.
    @Test func aDamagedItemFileLeavesOnlyItselfOutOfABackup() throws {
        try withScratch(initialized: true) { scratch in
            for service in ["s1", "s2"] {
                try #require(scratch.run(["--group", "g1", "put", service], input: Data("v")).status == 0)
            }
            let planted = scratch.vault + "/groups/g1/" + String(repeating: "b", count: 64) + ".item"
            #expect(FileManager.default.createFile(atPath: planted, contents: Data(repeating: 9, count: 116)))
            let key = scratch.root + "/backup.key"
            #expect(
                FileManager.default.createFile(
                    atPath: key, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o600]))
            let export = try scratch.run(["export", "--backup-key-file", key, scratch.root + "/b"])
            #expect(export.status == 6, "\(export.errors)")
            #expect(export.errors.contains("left out \(planted)"), "\(export.errors)")
            #expect(!export.errors.contains("left out group g1"), "\(export.errors)")
            let other = scratch.root + "/other"
            try #require(scratch.run(["--vault", other, "init"], vaultOption: false).status == 0)
            let imported = try scratch.run(
                ["--vault", other, "import", "--backup-key-file", key, scratch.root + "/b"], vaultOption: false)
            #expect(imported.status == 0, "\(imported.errors)")
            for service in ["s1", "s2"] {
                #expect(
                    try scratch.run(["--vault", other, "--group", "g1", "get", service], vaultOption: false).text == "v"
                )
            }
        }
    }

    /// A client of several groups (a member of several shared groups, or `VAULT_ACCESS_GROUPS`) finds an
    /// item by its name in the groups it can read when another of its groups cannot be read (a member
    /// damaged its key): that group's failure is said only when no group holds the item.
    @Test func aGroupThatCannotBeReadHidesNoItemOfTheOtherGroups() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["--group", "g1", "put", "in-g1"], input: Data("one")).status == 0)
            try #require(scratch.run(["--group", "g2", "put", "in-g2"], input: Data("two")).status == 0)
            try Data(repeating: 0x41, count: 136).write(
                to: URL(fileURLWithPath: scratch.vault + "/groups/g1/group.key"))
            let both = ["VAULT_ACCESS_GROUPS": "g1,g2"]
            let found = try scratch.run(["get", "in-g2"], environment: both)
            #expect(found.status == 0 && found.text == "two", "\(found.errors)")
            let lost = try scratch.run(["get", "in-g1"], environment: both)
            #expect(lost.status == 6 && lost.errors.contains("group.key"), "\(lost.errors)")
        }
    }

    /// A group whose `.lock` a member replaced (here with a directory) stops writes to that group, naming
    /// the file, and does not stop the owner from making another group.
    @Test func aReplacedLockOfOneGroupDoesNotStopMakingAnother() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["--group", "g1", "put", "s"], input: Data("v")).status == 0)
            let lock = scratch.vault + "/groups/g1/.lock"
            try FileManager.default.removeItem(atPath: lock)
            try FileManager.default.createDirectory(atPath: lock, withIntermediateDirectories: false)
            let write = try scratch.run(["--group", "g1", "put", "s"], input: Data("w"))
            #expect(write.status != 0 && write.errors.contains(lock), "\(write.errors)")
            let create = try scratch.run(["group", "create", "g2"])
            #expect(create.status == 0, "\(create.errors)")
            #expect(try scratch.run(["--group", "g2", "put", "t"], input: Data("x")).status == 0)
        }
    }

    /// A rekey needs every group's key (one it could not seal again would be lost with the old master
    /// key): with one damaged or missing it changes nothing and says both ways out, and `group rm --force`,
    /// one of them, removes such a group.
    @Test func aRekeyNamesTheGroupItCannotOpenAndItsWaysOut() throws {
        try withScratch(initialized: true) { scratch in
            for group in ["g1", "g2", "g3"] {
                try #require(scratch.run(["--group", group, "put", "s"], input: Data("v")).status == 0)
            }
            let damaged = scratch.vault + "/groups/g1/group.key"
            try Data(repeating: 0x41, count: 136).write(to: URL(fileURLWithPath: damaged))
            try FileManager.default.removeItem(atPath: scratch.vault + "/groups/g2/group.key")
            for group in ["g1", "g2"] {
                let rekey = try scratch.run(["rekey"])
                #expect(rekey.status == 6, "\(rekey.errors)")
                #expect(rekey.errors.contains("nothing was changed"), "\(rekey.errors)")
                #expect(rekey.errors.contains("`vault group rm \(group) --force`"), "\(rekey.errors)")
                let removed = try scratch.run(["group", "rm", group, "--force"])
                #expect(removed.status == 0, "\(removed.errors)")
            }
            #expect(try scratch.run(["rekey"]).status == 0)
            #expect(try scratch.run(["--group", "g3", "get", "s"]).text == "v")
        }
    }

    /// Numbers read from the disk that do not fit where they go are refused or held, never a trap (exit
    /// 132): an item file's modification time past 2262 (its owner, a member for its own item, can set
    /// any; ext4 keeps them to 2446), and a `rekey.journal` cut short after its path length.
    @Test func outOfRangeNumbersOnDiskAreNoCrash() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc"], input: Data("v")).status == 0)
            let group = scratch.vault + "/groups/vault"
            let file = try #require(
                try FileManager.default.contentsOfDirectory(atPath: group).first { $0.hasSuffix(".item") })
            let touched = try scratch.shell("touch -d 2300-01-01 '\(group)/\(file)' && stat -c %Y '\(group)/\(file)'")
            try #require(
                touched.status == 0
                    && (Int64(touched.text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 9_300_000_000)
            #expect(try scratch.run(["get", "svc"]).text == "v")
            #expect(try scratch.run(["ls"]).status == 0)

            let journal = Data("VLTR".utf8) + Data([2, 0, 0, 0]) + Data(repeating: 0, count: 16) + Data([0, 1])
            try journal.write(to: URL(fileURLWithPath: scratch.vault + "/rekey.journal"))
            let get = try scratch.run(["get", "svc"])
            #expect(
                get.status == 6 && get.errors.contains("rekey.journal does not verify"), "\(get.status) \(get.errors)")
        }
    }

    /// Names are bounded (a documented limit), and an error line does not echo a long one in full.
    @Test func namesAreBoundedAndEchoesCut() throws {
        try withScratch(initialized: true) { scratch in
            let long = String(repeating: "s", count: 70_000)
            let put = try scratch.run(["put", long, "acct"], input: Data("v"))
            #expect(put.status == 2)
            #expect(
                put.errors.contains("the service is 70000 bytes; at most 4096 are allowed"), "\(put.errors.prefix(300))"
            )
            #expect(put.errors.count < 600, "\(put.errors.count) characters")
            #expect(try scratch.run(["ls"]).text.isEmpty)
            let get = try scratch.run(["get", String(repeating: "g", count: 5_000), "acct"])
            #expect(get.status == 1)
            #expect(get.errors.count < 400 && get.errors.contains(" bytes): not found"), "\(get.errors.prefix(300))")
            let label = try scratch.run(
                ["put", "svc", "acct", "--label", String(repeating: "l", count: 4_097)], input: Data("v"))
            #expect(
                label.status == 2 && label.errors.contains("the label is 4097 bytes"), "\(label.errors.prefix(300))")
        }
    }

    /// A bad access group name says which option or variable gave it.
    @Test func aBadClientNameNamesItsSource() throws {
        try withScratch(initialized: true) { scratch in
            let app = try scratch.run(["--app", "bad app!", "ls"])
            #expect(app.status == 2 && app.errors.hasPrefix("vault: --app: "), "\(app.errors)")
            let variable = try scratch.run(["ls"], environment: ["VAULT_ACCESS_GROUPS": "ok, b c"])
            #expect(
                variable.status == 2 && variable.errors.hasPrefix("vault: VAULT_ACCESS_GROUPS: "), "\(variable.errors)")
            let id = try scratch.run(["ls"], environment: ["VAULT_APP_ID": "bad id"])
            #expect(id.status == 2 && id.errors.hasPrefix("vault: VAULT_APP_ID: "), "\(id.errors)")
        }
    }

    /// Before: the passphrase was read until end of file, so a writer that kept its pipe open hung it.
    @Test func passphraseFDReadsOneLine() throws {
        try withScratch { scratch in
            let initialized = try scratch.run(
                ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("pass\n"))
            try #require(initialized.status == 0, "\(initialized.errors)")
            let put = try scratch.shell(
                #"exec 3< <(printf 'pass\n'; sleep 20); printf s | timeout -s KILL 10 "$V" --vault "$D" --passphrase-fd 3 put svc; echo "status=$?""#
            )
            #expect(put.text.contains("status=0"), "\(put.text) \(put.errors)")
        }
    }

    /// Before: a service manager that allows core files got one (with the heap's secrets) from the CLI.
    @Test func theToolSetsItsCoreFileLimitToZero() throws {
        try withScratch { scratch in
            try #require(
                scratch.run(
                    ["init", "--passphrase", "--kdf-cost", "minimum", "--passphrase-fd", "0"], input: Data("p\n")
                )
                .status == 0)
            // The tool waits for its passphrase on descriptor 3 while its limits are read.
            let run = try scratch.shell(
                #"ulimit -S -c unlimited; "$V" --vault "$D" --passphrase-fd 3 ls 3< <(sleep 1; echo p) & pid=$!; sleep 0.5; grep 'Max core file size' /proc/$pid/limits; wait $pid"#
            )
            let line = try #require(run.text.split(separator: "\n").first { $0.hasPrefix("Max core file size") })
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            #expect(fields.count >= 6 && fields[4] == "0", "\(line)")
        }
    }

    /// Before: reading a FIFO planted in place of a vault file hung the command.
    @Test(arguments: ["VAULT", "item", "spare", "lock", "move-note"])
    func aFIFOInPlaceOfAVaultFileHangsNothing(_ which: String) throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("one")).status == 0)
            try #require(scratch.run(["put", "svc", "acct"], input: Data("two")).status == 0)
            let group = scratch.vault + "/groups/vault"
            let itemName = try #require(
                try FileManager.default.contentsOfDirectory(atPath: group).first { $0.hasSuffix(".item") })
            let target: String
            switch which {
            case "VAULT": target = scratch.vault + "/VAULT"
            case "item": target = group + "/" + itemName
            case "spare": target = group + "/.spare"
            case "lock": target = scratch.vault + "/.lock"
            default: target = group + "/.move." + itemName.dropLast(5)
            }
            try? FileManager.default.removeItem(atPath: target)
            #expect(mkfifo(target, 0o600) == 0)
            if which == "move-note" {
                // Notes are looked for after a death (or in a group not left tidy): a dead writer's mark.
                let lock = try FileHandle(forWritingTo: URL(fileURLWithPath: group + "/.lock"))
                try lock.write(contentsOf: Data([1]))
                try lock.close()
            }
            let get = try scratch.shell(#"timeout -s KILL 10 "$V" --vault "$D" get svc acct; echo "status=$?" >&2"#)
            let put = try scratch.shell(
                #"printf three | timeout -s KILL 10 "$V" --vault "$D" put svc acct; echo "status=$?""#)
            #expect(!get.errors.contains("status=137") && !put.text.contains("status=137"), "a command hung")
            switch which {
            case "VAULT", "lock", "item":
                let failed = which == "item" ? get : put
                #expect(failed.errors.contains(target) && failed.errors.contains("FIFO"), "\(failed.errors)")
            case "spare":
                // The spare is the store's own scratch file: anything else under its name is removed.
                #expect(put.text.contains("status=0"), "\(put.errors)")
                #expect(try scratch.run(["get", "svc", "acct"]).text == "three")
            default:
                // A note is read by the first writer after a death: it refuses the FIFO by name.
                #expect(put.errors.contains(target) && put.errors.contains("FIFO"), "\(put.errors)")
            }
        }
    }

    /// Root making a vault under a directory that another user replaces with a link to a root-owned
    /// place (the race of `/tmp/NEW` swapped after its mkdir, made deterministic): the link is refused and
    /// nothing is made where it points. A link of root's own (`/var/run`) is still followed.
    @Test func initDoesNotFollowAnotherUsersLinkWhileItMakesTheVault() throws {
        guard Self.isRoot, canManageAccounts else {
            print("SKIP initDoesNotFollowAnotherUsersLinkWhileItMakesTheVault: needs root and throwaway users")
            return
        }
        try withScratch { scratch in
            try withThrowawayAccounts(users: 1, groups: 0) { users, _ in
                let target = scratch.root + "/root-owned"
                try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
                let link = scratch.root + "/NEW"
                try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
                #expect(try scratch.shell("chown -h \(users[0].uid) '\(link)'").status == 0)
                let refused = try scratch.run(["--vault", link + "/vault", "init"], vaultOption: false)
                // Root acts as the owner of a link on the way (VaultOwner), who cannot write there; the store
                // itself refuses the link too (VaultLayoutTests).
                #expect(refused.status == 4, "\(refused.errors)")
                #expect(!FileManager.default.fileExists(atPath: target + "/vault"), "made through the link")
                // Root's own link is followed.
                let rootLink = scratch.root + "/ROOT"
                try FileManager.default.createSymbolicLink(atPath: rootLink, withDestinationPath: target)
                let made = try scratch.run(["--vault", rootLink + "/deeper/vault", "init"], vaultOption: false)
                #expect(FileManager.default.fileExists(atPath: target + "/deeper"), "\(made.errors)")
            }
        }
    }

    @Test func aSocketOrADeviceInPlaceOfAnItemIsNamed() throws {
        guard Self.isRoot else {
            print("SKIP aSocketOrADeviceInPlaceOfAnItemIsNamed: mknod of a device needs root")
            return
        }
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("one")).status == 0)
            let group = scratch.vault + "/groups/vault"
            let item = try #require(
                try FileManager.default.contentsOfDirectory(atPath: group).first { $0.hasSuffix(".item") })
            for (kind, make) in [
                // bind(2) takes at most 107 bytes of path: bind nearby, then rename into place.
                (
                    "socket",
                    "import os,socket,sys,tempfile; d=tempfile.mkdtemp(); s=socket.socket(socket.AF_UNIX); "
                        + "s.bind(d+'/s'); os.rename(d+'/s', sys.argv[1]); os.rmdir(d)"
                ),
                ("character device", "import os,sys; os.mknod(sys.argv[1], 0o20600, os.makedev(1, 3))"),
            ] {
                try? FileManager.default.removeItem(atPath: group + "/" + item)
                let made = try scratch.shell(
                    #"python3 -c "$MAKE" "$TARGET""#, environment: ["MAKE": make, "TARGET": group + "/" + item])
                try #require(made.status == 0, "\(made.errors)")
                let get = try scratch.shell(#"timeout -s KILL 10 "$V" --vault "$D" get svc acct"#)
                #expect(get.status != 0 && get.status != 137, "\(kind): \(get.status)")
                #expect(get.errors.contains(group + "/" + item), "\(kind): \(get.errors)")
                #expect(get.errors.contains("not a regular file"), "\(kind): \(get.errors)")
            }
        }
    }

    /// Before: `--vault link/` and `--vault link/.` opened the directory a symlink points to.
    @Test(arguments: ["", "/", "/.", "//", "/./"])
    func aTrailingSeparatorDoesNotGetPastTheSymlinkRefusal(_ suffix: String) throws {
        try withScratch(initialized: true) { scratch in
            let link = scratch.root + "/link"
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: scratch.vault)
            let run = try scratch.run(["--vault", link + suffix, "ls"], vaultOption: false)
            #expect(run.status == 4, "\(suffix): \(run.status) \(run.errors)")
            #expect(run.errors.contains("symbolic link"), "\(run.errors)")
        }
    }

    /// A parent that another user can write lets them swap the vault for one of their own.
    @Test func aParentWritableByOthersIsRefusedAndNamed() throws {
        try withScratch { scratch in
            let parent = scratch.root + "/shared"
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            let vault = parent + "/vault"
            try #require(scratch.run(["--vault", vault, "init"], vaultOption: false).status == 0)
            try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: parent)
            let open = try scratch.run(["--vault", vault, "ls"], vaultOption: false)
            #expect(open.status == 4, "\(open.errors)")
            #expect(
                open.errors.contains(parent) && open.errors.contains("writable by group or others"), "\(open.errors)")
            // The sticky bit (as on /tmp) makes a world-writable parent safe.
            try FileManager.default.setAttributes([.posixPermissions: 0o1777], ofItemAtPath: parent)
            #expect(try scratch.run(["--vault", vault, "ls"], vaultOption: false).status == 0)
        }
    }

    /// Root acts as a vault's owner (`VaultOwner`), so the refusal of a foreign directory is seen by
    /// another user (`nobody`); a parent owned by another user is refused for root too.
    @Test func aDirectoryOwnedByAnotherUserIsRefused() throws {
        guard Self.isRoot else {
            print("SKIP aDirectoryOwnedByAnotherUserIsRefused: chown to another user needs root")
            return
        }
        try withScratch(initialized: true) { scratch in
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scratch.root)
            let foreign = 54_321
            try #require(chown(scratch.root, uid_t(foreign), gid_t(foreign)) == 0)
            let parent = try scratch.run(["ls"])
            #expect(parent.status == 4, "a parent: \(parent.status) \(parent.errors)")
            #expect(parent.errors.contains(scratch.root) && parent.errors.contains("\(foreign)"), "\(parent.errors)")
            try #require(chown(scratch.root, 0, 0) == 0)
            // The vault made `nobody`'s (with an item), then one directory of it another user's.
            try #require(scratch.run(["put", "svc", "acct"], input: Data("kept")).status == 0)
            try #require(scratch.shell(#"chown -R nobody "$D""#).status == 0)
            let nobody = uid_t(65534)
            // The vault directory another user's: the vault is that user's, and `nobody` at most a member of
            // its shared groups; it reads nothing of the private groups and writes nothing.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: scratch.vault)
            try #require(chown(scratch.vault, uid_t(foreign), gid_t(foreign)) == 0)
            let get = try scratch.shell(#"/usr/sbin/runuser -u nobody -- "$V" --vault "$D" get svc acct"#)
            #expect(get.status != 0 && get.output.isEmpty, "\(get.status) \(get.errors)")
            let put = try scratch.shell(#"printf x | /usr/sbin/runuser -u nobody -- "$V" --vault "$D" put svc other"#)
            #expect(put.status != 0, "\(put.status) \(put.errors)")
            try #require(chown(scratch.vault, nobody, gid_t(foreign)) == 0)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: scratch.vault)
            // groups/ another user's: the owner `nobody` is refused, told whose it is.
            let groups = scratch.vault + "/groups"
            // 0755: the other user, its owner, could write in it, and `nobody` can open it to be told so.
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: groups)
            try #require(chown(groups, uid_t(foreign), gid_t(foreign)) == 0)
            let open = try scratch.shell(#"/usr/sbin/runuser -u nobody -- "$V" --vault "$D" ls"#)
            #expect(open.status == 4, "groups/: \(open.status) \(open.errors)")
            #expect(open.errors.contains(groups) && open.errors.contains("\(foreign)"), "groups/: \(open.errors)")
            try #require(chown(groups, nobody, gid_t(foreign)) == 0)
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: groups)
            #expect(try scratch.shell(#"/usr/sbin/runuser -u nobody -- "$V" --vault "$D" ls"#).status == 0)
            try #require(scratch.shell(#"chown -R root "$D""#).status == 0)
            #expect(try scratch.run(["ls"]).status == 0)
        }
    }

    /// Before: renaming `groups` to `groups.old` (or `master.key` to `master.key.new`) made the next
    /// command run rekey recovery, which deleted every item (or the only key).
    @Test func bareFileNamesAreNoRecoveryInstructions() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("kept")).status == 0)
            let fm = FileManager.default
            try fm.moveItem(atPath: scratch.vault + "/groups", toPath: scratch.vault + "/groups.old")
            let afterGroups = try scratch.run(["get", "svc", "acct"])
            #expect(afterGroups.status != 0)
            #expect(afterGroups.errors.contains("groups.old"), "\(afterGroups.errors)")
            #expect(fm.fileExists(atPath: scratch.vault + "/groups.old"))
            try fm.moveItem(atPath: scratch.vault + "/groups.old", toPath: scratch.vault + "/groups")
            #expect(try scratch.run(["get", "svc", "acct"]).text == "kept")

            try fm.moveItem(atPath: scratch.vault + "/master.key", toPath: scratch.vault + "/master.key.new")
            let afterKey = try scratch.run(["get", "svc", "acct"])
            #expect(afterKey.status != 0)
            #expect(fm.fileExists(atPath: scratch.vault + "/master.key.new"), "the only key was deleted")
            try fm.moveItem(atPath: scratch.vault + "/master.key.new", toPath: scratch.vault + "/master.key")
            #expect(try scratch.run(["get", "svc", "acct"]).text == "kept")

            // A journal that no key of the vault authenticates is not acted on either.
            try fm.moveItem(atPath: scratch.vault + "/groups", toPath: scratch.vault + "/groups.old")
            // Well formed (magic, version 1, this vault's id), with tags that no key of the vault makes.
            let marker = try #require(fm.contents(atPath: scratch.vault + "/VAULT"))
            var journal = Data("VLTR".utf8) + Data([1, 0, 0, 0]) + marker[8..<24]
            journal += Data((0..<64).map { _ in UInt8.random(in: 0...255) })
            _ = fm.createFile(atPath: scratch.vault + "/rekey.journal", contents: journal)
            let forged = try scratch.run(["get", "svc", "acct"])
            #expect(forged.status == 6, "\(forged.errors)")
            #expect(fm.fileExists(atPath: scratch.vault + "/groups.old"))
        }
    }

    /// Before: a create-if-missing open (a helper's store, the Security module's first add) took a
    /// missing VAULT for an unfinished init and wrote a new one, whose vault id no item matched; the
    /// items then counted as damaged and could be removed.
    @Test func aMissingMarkerWithItemsIsDamageNotAnUnfinishedInit() throws {
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("kept")).status == 0)
            let marker = try #require(FileManager.default.contents(atPath: scratch.vault + "/VAULT"))
            try FileManager.default.removeItem(atPath: scratch.vault + "/VAULT")
            let helper = try scratch.shell(
                #"cd "$(dirname "$D")" && ln -sf "$V" git-credential-vault && printf 'protocol=https\nhost=h\nusername=u\npassword=p\n\n' | "#
                    + #"VAULT_DIR="$D" ./git-credential-vault store"#)
            #expect(helper.status == 6, "\(helper.status) \(helper.errors)")
            #expect(helper.errors.contains("VAULT") && helper.errors.contains("holds items"), "\(helper.errors)")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/VAULT"), "a new marker was written")
            let get = try scratch.run(["get", "svc", "acct"])
            #expect(get.status == 6 && get.errors.contains("restore it from a backup"), "\(get.errors)")
            try marker.write(to: URL(fileURLWithPath: scratch.vault + "/VAULT"))
            #expect(try scratch.run(["get", "svc", "acct"]).text == "kept")
        }
    }

    /// Before: a leftover groups.old made a rekey fail after its journal, and every open after it fail.
    /// The upgrade (which writes a new groups directory) refuses it before its journal; the rekey (in
    /// place) does not use it.
    @Test func anUpgradeRefusesALeftoverGroupsOld() throws {
        try withScratch { scratch in
            try FormatOneFixture.plain.copy(to: scratch.vault)
            try FileManager.default.createDirectory(
                atPath: scratch.vault + "/groups.old/old-group", withIntermediateDirectories: true)
            let upgrade = try scratch.run(["upgrade"])
            #expect(upgrade.status == 6, "\(upgrade.status) \(upgrade.errors)")
            #expect(upgrade.errors.contains("groups.old"), "\(upgrade.errors)")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/rekey.journal"))
            #expect(try FormatOneFixture.version(at: scratch.vault) == 1)
            try FileManager.default.removeItem(atPath: scratch.vault + "/groups.old")
            #expect(try scratch.run(["--group", "com.example.app", "get", "postgres", "app"]).text == "v2")
        }
        try withScratch(initialized: true) { scratch in
            try #require(scratch.run(["put", "svc", "acct"], input: Data("kept")).status == 0)
            try FileManager.default.createDirectory(
                atPath: scratch.vault + "/groups.old/old-group", withIntermediateDirectories: true)
            let rekey = try scratch.run(["rekey"])
            #expect(rekey.status == 0, "\(rekey.status) \(rekey.errors)")
            #expect(!FileManager.default.fileExists(atPath: scratch.vault + "/rekey.journal"))
            #expect(try scratch.run(["get", "svc", "acct"]).text == "kept")
        }
    }

    /// Before: import read a file whole before looking at it, after asking for its passphrase.
    @Test func importChecksTheFileBeforeAskingOrReading() throws {
        try withScratch(initialized: true) { scratch in
            let notABackup = scratch.root + "/not-a-backup"
            _ = FileManager.default.createFile(atPath: notABackup, contents: Data(repeating: 0x41, count: 1 << 20))
            // No terminal and no --passphrase-fd: a prompt would fail with "locked" (5).
            let run = try scratch.run(["import", notABackup])
            #expect(run.status == 6, "\(run.status) \(run.errors)")
            #expect(run.errors.contains("not a vault backup"), "\(run.errors)")
            let huge = scratch.root + "/huge"
            _ = FileManager.default.createFile(atPath: huge, contents: nil)
            try #require(truncate(huge, (1 << 30) + 1) == 0)
            let big = try scratch.run(["import", huge])
            #expect(big.status == 6 && big.errors.contains("is not a vault backup: it is"), "\(big.errors)")
            // A small file (a secret put where a backup was meant) says the same.
            let small = scratch.root + "/secret.txt"
            _ = FileManager.default.createFile(atPath: small, contents: Data("not a backup".utf8))
            let tiny = try scratch.run(["import", small])
            #expect(tiny.status == 6 && tiny.errors.contains("secret.txt is not a vault backup"), "\(tiny.errors)")
        }
    }
}
