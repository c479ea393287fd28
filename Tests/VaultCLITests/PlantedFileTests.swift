import Foundation
import Testing
import VaultStore
import VaultSystem
import VaultTestSupport

@testable import Vault

#if canImport(Glibc)
    import Glibc
#endif

/// A step of the planting tests that failed (not a finding: the test could not do what it meant to).
struct PlantingError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// A member of a shared group plants things under each name the store uses in the group's directory,
/// which every member may write (`<owner>:<gid>` 2770, no sticky bit), and the owner (root here, the
/// `vault` binary run plainly) and another member then run every command on the group, each killed
/// after `deadline` seconds:
///
/// - names (`Place`): `group.key`, `.lock` (also with `group.key` removed, so that the owner's next
///   write makes the group again), the file of an existing item and of the item the next put makes,
///   their generation records and move notes, a name like a temp file's, `group.key.new` (where
///   a rekey seals the group's key again), `.spare` (also with `group.key` removed: the group the
///   owner then makes is private and writes through its spare), and the per-user spares of a shared
///   group, the owner's `.spare.0` and the other member's;
/// - plants (`Plant`): a symlink to a root file outside the group (a passwd-like decoy) and one to a
///   directory, hard links to a non-empty and an empty file the member owns (to another's file too
///   where `fs.protected_hardlinks` is 0), a FIFO, a socket, a directory, and for `group.key` and
///   `.lock` a copy of its own;
/// - commands (`commands`): the other member's ls, get, put (update and add), rm; the owner's ls, get,
///   put (update and add), rm, `rotateGroup` (in this process: the CLI has no `group rotate` yet),
///   `group ls`, `group create` again, `check`, `rekey` and `group rm --force`. Some writes come after a writer
///   "died": the member sets byte 0 of `.lock` to 1, as a writer killed holding the lock leaves it,
///   so that the writer sweeps temp files and spares.
///
/// The plant is made again before each command that finds it gone. After each: no file outside the
/// group (the decoys, the member's files, `VAULT`, `master.key`, another group's files) changed in
/// contents, mode, owner, size or mtime, or disappeared; no command hung or died of a signal; a failure
/// names the file it refused (or is a plain "not found" / "already exists"); a member's own `group.key`
/// or `.lock` is refused wherever it is used; a planted temp file (or, after a death, a spare) is gone
/// after the sweep, unless it is a directory (which the sweep cannot unlink).
@Suite(.enabled(if: canRunAsOtherUsers, "needs root, the shadow tools and setpriv"), .serialized)
struct PlantedFileTests {
    /// Seconds before a command counts as hung (it is killed then).
    static let deadline = 10

    /// A name of the store in a group directory.
    enum Place: String, CaseIterable, CustomStringConvertible {
        case groupKey = "group.key"
        case lock = ".lock"
        /// `.lock`, and `group.key` removed: the owner's next write then makes the group's key again.
        case lockWithoutKey = ".lock without group.key"
        case existingItem = "<existing>.item"
        case nextItem = "<next>.item"
        case existingRecord = ".gen.<existing>"
        case nextRecord = ".gen.<next>"
        case existingNote = ".move.<existing>"
        case nextNote = ".move.<next>"
        case temporary = ".tmp.<16 hex>"
        /// The name under which a rekey seals `group.key` again before its commit point.
        case newGroupKey = "group.key.new"
        case spare = ".spare"
        /// `.spare`, and `group.key` removed: the owner's next write makes the group again, private, in
        /// the shared directory, and private groups write through their spare.
        case spareWithoutKey = ".spare without group.key"
        /// The owner's (root's) spare in a shared group, and the other member's.
        case ownersSpare = ".spare.<owner's uid>"
        case membersSpare = ".spare.<other member's uid>"

        var description: String { rawValue }

        /// Whether `group.key` is removed too before each command.
        var removesKey: Bool { self == .lockWithoutKey || self == .spareWithoutKey }

        /// The file name in a group whose existing item's id is `existing` and next one's `next`.
        func name(existing: String, next: String, temporary: String, member: ThrowawayUser) -> String {
            switch self {
            case .groupKey: "group.key"
            case .lock, .lockWithoutKey: ".lock"
            case .existingItem: existing + ".item"
            case .nextItem: next + ".item"
            case .existingRecord: ".gen." + existing
            case .nextRecord: ".gen." + next
            case .existingNote: ".move." + existing
            case .nextNote: ".move." + next
            case .temporary: temporary
            case .newGroupKey: "group.key.new"
            case .spare, .spareWithoutKey: ".spare"
            case .ownersSpare: ".spare.\(geteuid())"
            case .membersSpare: ".spare.\(member.uid)"
            }
        }

        /// Whether the store's own files are under this name (a member's copy of them is a forgery).
        var isOwnersFile: Bool { [.groupKey, .lock, .lockWithoutKey].contains(self) }
    }

    /// What the member puts under a name.
    enum Plant: String, CaseIterable, CustomStringConvertible {
        case symlinkToRootFile = "symlink to a root file"
        case symlinkToDirectory = "symlink to a directory"
        case hardLinkToOwnFile = "hard link to its own file"
        case hardLinkToOwnEmptyFile = "hard link to its own empty file"
        /// Only where `fs.protected_hardlinks` is 0: otherwise the kernel refuses a user a hard link to a
        /// file it neither owns nor may read and write.
        case hardLinkToRootFile = "hard link to a root file"
        case fifo = "FIFO"
        /// A Unix socket (made with Python, where it is installed).
        case socket = "socket"
        case directory = "directory"
        /// A copy of the owner's file that the member owns (`group.key` and `.lock` only).
        case ownCopy = "its own copy"

        var description: String { rawValue }

        /// The plants this machine lets a member make under `place`.
        static func available(at place: Place) -> [Plant] {
            let protected =
                (try? String(contentsOfFile: "/proc/sys/fs/protected_hardlinks", encoding: .utf8))
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) != "0" } ?? true
            return allCases.filter { plant in
                switch plant {
                case .ownCopy: place.isOwnersFile
                case .hardLinkToRootFile: !protected
                case .socket: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
                default: true
                }
            }
        }
    }

    /// The files outside the group that no command may touch.
    struct Outside {
        /// A root-owned directory next to the vault, with a passwd-like decoy (0644) and a secret (0600).
        let directory: String
        let passwd: String
        let secret: String
        /// A directory of the planting member's, with a file (0644, not empty) and an empty one.
        let memberDirectory: String
        let memberFile: String
        let memberEmptyFile: String

        init(root: String, member: ThrowawayUser) throws {
            directory = root + "/outside"
            passwd = directory + "/passwd"
            secret = directory + "/secret"
            memberDirectory = root + "/member"
            memberFile = memberDirectory + "/own"
            memberEmptyFile = memberDirectory + "/empty"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            try FileManager.default.createDirectory(atPath: memberDirectory, withIntermediateDirectories: false)
            try Data("root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n".utf8)
                .write(to: URL(fileURLWithPath: passwd))
            try Data("not for members\n".utf8).write(to: URL(fileURLWithPath: secret))
            try Data("the member's own file\n".utf8).write(to: URL(fileURLWithPath: memberFile))
            try Data().write(to: URL(fileURLWithPath: memberEmptyFile))
            for (path, mode) in [(directory, 0o755), (passwd, 0o644), (secret, 0o600)] {
                try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            }
            for (path, mode) in [(memberDirectory, 0o755), (memberFile, 0o644), (memberEmptyFile, 0o644)] {
                try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
                guard chown(path, member.uid, member.gid) == 0 else {
                    throw PlantingError(message: "cannot give \(path) to \(member.name): \(Errno(rawValue: errno))")
                }
            }
        }

        var watched: [String] { [directory, passwd, secret, memberDirectory, memberFile, memberEmptyFile] }
    }

    /// What `lstat` and a read say of a path: everything a write, truncation, chmod or deletion changes
    /// (not the link count or change time, which a hard link planted to a file changes).
    struct FileState: Equatable, CustomStringConvertible {
        let exists: Bool
        let mode: UInt32
        let owner: UInt32
        let group: UInt32
        let size: Int64
        let modified: Int
        let modifiedNanoseconds: Int
        let contents: [String]

        init(_ path: String) {
            var status = stat()
            guard lstat(path, &status) == 0 else {
                self.exists = false
                (mode, owner, group, size, modified, modifiedNanoseconds, contents) = (0, 0, 0, 0, 0, 0, [])
                return
            }
            exists = true
            mode = status.st_mode
            owner = status.st_uid
            group = status.st_gid
            size = Int64(status.st_size)
            modified = status.st_mtim.tv_sec
            modifiedNanoseconds = status.st_mtim.tv_nsec
            if status.st_mode & S_IFMT == S_IFDIR {
                contents = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
            } else if status.st_mode & S_IFMT == S_IFREG {
                contents = [(try? Data(contentsOf: URL(fileURLWithPath: path)))?.base64EncodedString() ?? "?"]
            } else {
                contents = []
            }
        }

        var description: String {
            exists
                ? "mode \(String(mode, radix: 8)) \(owner):\(group) \(size) bytes, mtime \(modified).\(modifiedNanoseconds)"
                    + ", \(contents)"
                : "missing"
        }
    }

    /// What a run of a command gave.
    struct Outcome {
        let status: Int32
        let output: String
        let errors: String
    }

    /// One vault with shared groups, its accounts and the files outside, for the whole suite.
    struct Setup {
        let vault: String
        let root: String
        let binary: String
        let copy: String
        /// The member that plants, and another member of the same Unix group.
        let planter: ThrowawayUser
        let member: ThrowawayUser
        let unixGroup: ThrowawayGroup
        let outside: Outside

        /// `root`'s watched files, and the vault's own files outside the groups (and another group's).
        var watched: [String] {
            outside.watched + [vault + "/VAULT", vault + "/master.key", vault + "/groups/web"]
                + ((try? FileManager.default.contentsOfDirectory(atPath: vault + "/groups/web")) ?? [])
                .filter { $0 != ".lock" }.map { vault + "/groups/web/" + $0 }
        }

        func snapshot() -> [String: FileState] {
            Dictionary(uniqueKeysWithValues: watched.map { ($0, FileState($0)) })
        }

        /// `vault --vault VAULT arguments` as `user` (the owner, root, when nil), killed after the deadline.
        func vault(_ user: ThrowawayUser?, _ arguments: [String], input: String = "") throws -> Outcome {
            let timeout = ["-k", "2", String(PlantedFileTests.deadline)]
            if let user {
                let result = try runAs(
                    user, "/usr/bin/timeout", timeout + [copy, "--vault", vault] + arguments,
                    environment: ["HOME": "/nonexistent"], input: Data(input.utf8))
                return Outcome(
                    status: result.status, output: String(decoding: result.output, as: UTF8.self),
                    errors: result.errors)
            }
            let result = try runVault(
                timeout + [binary, "--vault", vault] + arguments, input: Data(input.utf8),
                environment: ["HOME": "/nonexistent", "PATH": "/usr/bin:/bin"], scratch: root,
                executable: URL(fileURLWithPath: "/usr/bin/timeout"))
            return Outcome(status: result.status, output: result.text, errors: result.errors)
        }

        /// `script` run by `/bin/sh` as the planting member, in `directory`.
        func plantingShell(_ script: String, in directory: String) throws {
            let result = try runAs(
                planter, "/bin/sh", ["-c", "cd \"$1\" || exit 1; " + script, "sh", directory],
                environment: ["HOME": "/nonexistent"])
            guard result.status == 0 else {
                throw PlantingError(
                    message:
                        "as \(planter.name) in \(directory): `\(script)` failed (\(result.status)): \(result.errors)")
            }
        }
    }

    func withSetup(_ body: (Setup) throws -> Void) throws {
        try withSharedGroupsVault(copying: [vaultExecutable.path]) { vault, copies, users, groups in
            try addMember(users[1], to: groups[0])
            let root = (vault as NSString).deletingLastPathComponent
            let setup = Setup(
                vault: vault, root: root, binary: vaultExecutable.path, copy: copies[0], planter: users[0],
                member: users[1], unixGroup: groups[0], outside: try Outside(root: root, member: users[0]))
            // Another group has an item: its files are outside the groups under attack.
            let web = try setup.vault(users[1], ["--group", "web", "put", "cdn", "key"], input: "w")
            try #require(web.status == 0, "\(web.errors)")
            try body(setup)
        }
    }

    /// A group made for one planting: its directory, the file names of an item that exists (`alpha`,
    /// written twice: it has a generation record) and of one that the next put makes (`beta`).
    struct PlantedGroup {
        let name: String
        let directory: String
        let existing: String
        let next: String
        let temporary: String
    }

    func makeGroup(_ name: String, _ setup: Setup) throws -> PlantedGroup {
        let made = try setup.vault(nil, ["group", "create", name, "--unix-group", setup.unixGroup.name])
        try #require(made.status == 0, "group create \(name): \(made.errors)")
        let directory = setup.vault + "/groups/" + name
        func items() throws -> Set<String> {
            Set(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".item") })
        }
        let writers: [(ThrowawayUser?, String)] = [(setup.planter, "alpha 1"), (nil, "alpha 2")]
        for (user, value) in writers {
            let put = try setup.vault(user, ["--group", name, "put", "alpha"], input: value)
            try #require(put.status == 0, "put alpha: \(put.errors)")
        }
        let existing = String(try #require(try items().first).dropLast(5))
        let putBeta = try setup.vault(nil, ["--group", name, "put", "beta"], input: "beta")
        try #require(putBeta.status == 0, "put beta: \(putBeta.errors)")
        let next = String(try #require(try items().subtracting([existing + ".item"]).first).dropLast(5))
        let removed = try setup.vault(nil, ["--group", name, "rm", "beta"])
        try #require(removed.status == 0, "rm beta: \(removed.errors)")
        var record = stat()
        try #require(lstat(directory + "/.gen." + existing, &record) == 0, "alpha has no generation record")
        let temporary = ".tmp." + (0..<16).map { _ in String(Int.random(in: 0..<16), radix: 16) }.joined()
        return PlantedGroup(
            name: name, directory: directory, existing: existing, next: next, temporary: temporary)
    }

    /// The shell commands that put `plant` under `name` (whatever is there is removed first).
    func plantScript(_ plant: Plant, _ name: String, _ setup: Setup) -> String {
        let quoted = "'" + name + "'"
        switch plant {
        case .symlinkToRootFile: return "rm -rf -- \(quoted) && ln -s '\(setup.outside.passwd)' \(quoted)"
        case .symlinkToDirectory: return "rm -rf -- \(quoted) && ln -s '\(setup.outside.directory)' \(quoted)"
        case .hardLinkToOwnFile: return "rm -rf -- \(quoted) && ln '\(setup.outside.memberFile)' \(quoted)"
        case .hardLinkToOwnEmptyFile: return "rm -rf -- \(quoted) && ln '\(setup.outside.memberEmptyFile)' \(quoted)"
        case .hardLinkToRootFile: return "rm -rf -- \(quoted) && ln '\(setup.outside.secret)' \(quoted)"
        case .fifo: return "rm -rf -- \(quoted) && mkfifo \(quoted)"
        case .socket:
            return "rm -rf -- \(quoted) && /usr/bin/python3 -c "
                + "'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' \(quoted)"
        case .directory: return "rm -rf -- \(quoted) && mkdir \(quoted)"
        case .ownCopy:
            // The member's copy, as group-accessible as the owner's file is.
            return "cat -- \(quoted) > .planting && chmod \(name == ".lock" ? "660" : "640") .planting && rm -f -- "
                + "\(quoted) && mv .planting \(quoted)"
        }
    }

    /// Whether `plant` is what stands at `path` now.
    func isPlanted(_ plant: Plant, at path: String, _ setup: Setup) -> Bool {
        var status = stat()
        guard lstat(path, &status) == 0 else { return false }
        let kind = status.st_mode & S_IFMT
        func inode(_ other: String) -> Bool {
            var target = stat()
            return stat(other, &target) == 0 && target.st_ino == status.st_ino && target.st_dev == status.st_dev
        }
        switch plant {
        case .symlinkToRootFile, .symlinkToDirectory:
            let target = plant == .symlinkToRootFile ? setup.outside.passwd : setup.outside.directory
            return kind == S_IFLNK && (try? FileManager.default.destinationOfSymbolicLink(atPath: path)) == target
        case .hardLinkToOwnFile: return kind == S_IFREG && inode(setup.outside.memberFile)
        case .hardLinkToOwnEmptyFile: return kind == S_IFREG && inode(setup.outside.memberEmptyFile)
        case .hardLinkToRootFile: return kind == S_IFREG && inode(setup.outside.secret)
        case .fifo: return kind == S_IFIFO
        case .socket: return kind == S_IFSOCK
        case .directory: return kind == S_IFDIR
        case .ownCopy: return kind == S_IFREG && status.st_uid == setup.planter.uid
        }
    }

    /// One command of the matrix: who runs it, what, and whether a writer "died" before it (byte 0 of
    /// the group's `.lock` set to 1 by the member, as a writer killed holding the lock leaves it).
    struct Command: CustomStringConvertible {
        let user: ThrowawayUser?
        let arguments: [String]
        var input = ""
        var afterDeath = false
        /// The owner's `rotateGroup` (the CLI has no `group rotate` yet), in this process.
        var rotation = false

        /// Whether the command writes items of the group (rotations too).
        var writes: Bool { rotation || arguments.contains("put") || arguments.contains("rm") }

        /// Whether the command reads (`group.key`) or locks (`.lock`) the file at `place`.
        func uses(_ place: Place) -> Bool {
            switch place {
            case .groupKey:
                rotation || arguments.contains("--group") || arguments.contains("check")
                    || arguments.starts(with: ["group", "create"]) || arguments.starts(with: ["group", "rm"])
            // `group create` of a group that exists says so under the vault's lock alone, never the group's.
            case .lock: writes
            // Without `group.key` the group does not exist for members: only the owner gets to its lock.
            case .lockWithoutKey: user == nil && (writes || arguments.starts(with: ["group", "create"]))
            default: false
            }
        }

        var description: String {
            (user == nil ? "root" : "member") + " " + (rotation ? "rotate" : arguments.joined(separator: " "))
                + (afterDeath ? " (after a writer died)" : "")
        }
    }

    func commands(_ group: PlantedGroup, _ setup: Setup) -> [Command] {
        let g = ["--group", group.name]
        let member = setup.member
        return [
            Command(user: member, arguments: g + ["ls"]),
            Command(user: member, arguments: g + ["get", "alpha"]),
            Command(user: member, arguments: g + ["put", "alpha"], input: "member alpha"),
            Command(user: member, arguments: g + ["put", "beta"], input: "member beta", afterDeath: true),
            Command(user: member, arguments: g + ["rm", "beta"]),
            Command(user: member, arguments: g + ["rm", "alpha"], afterDeath: true),
            Command(user: member, arguments: g + ["put", "alpha"], input: "member alpha again"),
            Command(user: nil, arguments: g + ["ls"]),
            Command(user: nil, arguments: g + ["get", "alpha"]),
            Command(user: nil, arguments: g + ["put", "alpha"], input: "root alpha", afterDeath: true),
            Command(user: nil, arguments: g + ["put", "beta"], input: "root beta"),
            Command(user: nil, arguments: g + ["rm", "beta"], afterDeath: true),
            Command(user: nil, arguments: [], rotation: true),
            Command(user: nil, arguments: ["group", "ls"]),
            Command(user: nil, arguments: ["group", "create", group.name, "--unix-group", setup.unixGroup.name]),
            Command(user: nil, arguments: ["check"]),
            Command(user: nil, arguments: ["rekey"]),
            Command(user: nil, arguments: g + ["rm", "alpha"]),
            Command(user: nil, arguments: ["group", "rm", group.name, "--force"]),
        ]
    }

    /// The owner's rotation of `group`, in this process, on a thread of its own: nil when it did not
    /// end before the deadline (the thread is then left behind).
    func rotate(_ group: String, _ setup: Setup) -> Outcome? {
        final class Result: @unchecked Sendable {
            var outcome: Outcome?
        }
        let result = Result()
        let done = DispatchSemaphore(value: 0)
        let vault = setup.vault
        Thread {
            do {
                let owner = try Vault.open(at: vault, client: try Client(applicationIdentifier: "owner"))
                let count = try owner.engine.store.rotateGroup(try GroupName(group))
                result.outcome = Outcome(status: 0, output: "\(count) items sealed again", errors: "")
            } catch {
                result.outcome = Outcome(status: 7, output: "", errors: "\(error)")
            }
            done.signal()
        }.start()
        // The semaphore orders the thread's write before this read.
        guard done.wait(timeout: .now() + .seconds(Self.deadline)) == .success else { return nil }
        return result.outcome
    }

    /// How the commands of a planting ended.
    struct Tally {
        var succeeded = 0
        var refused = 0
        /// "Not found" (an item the plant stood in for) or "already exists" (`group create`).
        var nothingToDo = 0
    }

    /// Plants `plant` under `place` of a new group, and runs every command, planting again before each
    /// when the one before removed or replaced it.
    func run(_ place: Place, _ plant: Plant, index: Int, _ setup: Setup, _ tally: inout Tally) throws {
        let group = try makeGroup("p\(index)", setup)
        defer { try? FileManager.default.removeItem(atPath: group.directory) }
        let name = place.name(
            existing: group.existing, next: group.next, temporary: group.temporary, member: setup.member)
        let path = group.directory + "/" + name
        let scenario = "\(plant) at \(place) (\(name))"
        for command in commands(group, setup) {
            if FileManager.default.fileExists(atPath: group.directory), !isPlanted(plant, at: path, setup) {
                var script = plantScript(plant, name, setup)
                if place.removesKey { script = "rm -f group.key && " + script }
                if plant == .ownCopy, !FileManager.default.fileExists(atPath: path) {
                    script = ": > '\(name)'"
                }
                try setup.plantingShell(script, in: group.directory)
                try #require(isPlanted(plant, at: path, setup), "\(scenario): the plant did not take")
            }
            if place.removesKey, FileManager.default.fileExists(atPath: group.directory + "/group.key") {
                try setup.plantingShell("rm -f group.key", in: group.directory)
            }
            if command.afterDeath, place != .lock, place != .lockWithoutKey {
                try setup.plantingShell(
                    "printf '\\001' | dd of=.lock bs=1 count=1 conv=notrunc 2>/dev/null", in: group.directory)
            }
            let before = setup.snapshot()
            let outcome: Outcome
            if command.rotation {
                guard let rotated = rotate(group.name, setup) else {
                    Issue.record("\(scenario): \(command) hung (still running after \(Self.deadline) s)")
                    continue
                }
                outcome = rotated
            } else {
                outcome = try setup.vault(command.user, command.arguments, input: command.input)
            }
            let after = setup.snapshot()
            for (watched, state) in before where after[watched] != state {
                // A rekey's own work: the vault's key files and every group's key sealed again (the
                // directories holding the replaced files change their mtime); nothing else.
                if command.arguments == ["rekey"], watched.hasPrefix(setup.vault + "/"), let now = after[watched],
                    now.exists, now.mode == state.mode, now.owner == state.owner, now.group == state.group
                {
                    let keyFile = ["VAULT", "master.key", "classes.key", "group.key"].contains(
                        URL(fileURLWithPath: watched).lastPathComponent)
                    let sameDirectory = state.mode & S_IFMT == S_IFDIR && now.contents == state.contents
                    if keyFile || sameDirectory { continue }
                }
                let now = after[watched].map { "\($0)" } ?? "?"
                Issue.record("\(scenario): \(command) changed \(watched), outside the group: \(state) became \(now)")
            }
            #expect(
                outcome.status != 124 && outcome.status != 137,
                "\(scenario): \(command) hung (killed after \(Self.deadline) s)")
            #expect(
                outcome.status < 124, "\(scenario): \(command) crashed (status \(outcome.status)): \(outcome.errors)")
            let errors = outcome.errors.trimmingCharacters(in: .whitespacesAndNewlines)
            switch outcome.status {
            case 0: tally.succeeded += 1
            case 1, 3: tally.nothingToDo += 1
            default: tally.refused += 1
            }
            // Advice never hands the command to whoever planted the file.
            #expect(
                !errors.contains("runuser -u \(setup.planter.name)"),
                "\(scenario): \(command) advised running as the planter: \(errors)")
            if outcome.status != 0 {
                // A refusal names the file it refused (or its group's directory); else it is the "not found"
                // of an item the plant stood in for, or the "already exists" of `group create`.
                #expect(!errors.isEmpty, "\(scenario): \(command) failed (\(outcome.status)) without a message")
                #expect(
                    errors.contains(group.directory) || [1, 3].contains(outcome.status),
                    "\(scenario): \(command) failed (\(outcome.status)) without naming the file: \(errors)")
            }
            // The member's own `group.key` or `.lock` is never the group's: whatever uses it is refused,
            // naming it (the owner's check says whose it is; another member may not even open it).
            // (Without its group.key, a group that holds items is refused at the missing key first.)
            let refusedAtTheMissingKey = place == .lockWithoutKey && errors.contains("group.key is missing but group")
            if plant == .ownCopy, command.uses(place), !refusedAtTheMissingKey {
                #expect(
                    outcome.status != 0 && errors.contains(path),
                    "\(scenario): \(command) accepted the member's \(name) (\(outcome.status)): \(errors)")
                if command.user == nil {
                    #expect(errors.contains("not to the vault's owner"), "\(scenario): \(command): \(errors)")
                }
            }
            // A temp file's name or the spare's, removed by a write after a death (a group left tidy is not
            // listed): unlinked, never written through (a directory cannot be unlinked). A user's spare is
            // also replaced by that user's next put.
            let putsOwnSpare =
                place == .ownersSpare && command.user == nil || place == .membersSpare && command.user == setup.member
            let sweeps =
                place == .temporary && command.afterDeath
                || [.spare, .ownersSpare, .membersSpare].contains(place) && command.afterDeath
                || place == .spareWithoutKey && command.user == nil && command.arguments.contains("put")
                    && outcome.status == 0
                || putsOwnSpare && command.arguments.contains("put") && outcome.status == 0
            if sweeps, plant != .directory {
                #expect(!isPlanted(plant, at: path, setup), "\(scenario): \(command) left the plant in place")
            }
        }
    }

    @Test(arguments: Place.allCases)
    func aPlantedFileMakesNoCommandWriteOutsideTheGroupOrHang(_ place: Place) throws {
        try withSetup { setup in
            var tally = Tally()
            let plants = Plant.available(at: place)
            for (index, plant) in plants.enumerated() {
                try run(place, plant, index: index + 1, setup, &tally)
            }
            print(
                "planted at \(place): \(plants.map(\.description).joined(separator: ", ")); "
                    + "\(tally.succeeded + tally.refused + tally.nothingToDo) commands: \(tally.succeeded) succeeded, "
                    + "\(tally.refused) refused naming the file, \(tally.nothingToDo) not found or already there")
        }
    }
}
