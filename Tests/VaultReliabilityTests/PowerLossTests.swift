import Foundation
import Testing
import Vault
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// A file system crash that a process kill cannot give: a loop-mounted ext4 or xfs image is shut down
/// with `xfs_io -x -c shutdown` (no log flush: whatever the file system has not yet written to the
/// device is lost, as at a power cut) while writers run, then unmounted and mounted again. Every
/// acknowledged operation must be there and every item must be its old or its new value. The
/// control, a writer that never calls fsync, must lose acknowledged writes, or the setup proves
/// nothing. Needs root, loop devices and xfsprogs; skipped with a message otherwise.
@Suite(.serialized) struct PowerLossTests {
    struct Image {
        let kind: String
        let image: String
        let mountPoint: String

        func mount() throws -> Bool {
            let result = try Shell.run("mount", "-o", "loop", image, mountPoint)
            if result.status != 0 { print("mount failed: \(result.output)") }
            return result.status == 0
        }

        func shutdown() throws {
            // No -f: the log is not flushed.
            let result = try Shell.run("xfs_io", "-x", "-c", "shutdown", mountPoint)
            #expect(result.status == 0, "xfs_io shutdown: \(result.output)")
        }

        func unmount() throws {
            for _ in 0..<50 {
                if try Shell.run("umount", mountPoint).status == 0 { return }
                usleep(100_000)
            }
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            let open = fds.compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
            }
            .filter { $0.hasPrefix(mountPoint) }
            Issue.record("cannot unmount \(mountPoint): this process holds \(open)")
        }
    }

    /// Makes and mounts an image, or explains why it cannot.
    static func prepare(_ kind: String, in dir: TemporaryDirectory) throws -> Image? {
        guard geteuid() == 0 else {
            print("SKIP power-loss \(kind): needs root to mount a loop device")
            return nil
        }
        let mkfs = kind == "xfs" ? "mkfs.xfs" : "mkfs.ext4"
        for tool in [mkfs, "xfs_io", "losetup"] where try Shell.run("which", tool).status != 0 {
            print("SKIP power-loss \(kind): \(tool) is not installed (apt-get install xfsprogs e2fsprogs)")
            return nil
        }
        let image = Image(kind: kind, image: dir.path + "/\(kind).img", mountPoint: dir.path + "/\(kind)")
        try FileManager.default.createDirectory(atPath: image.mountPoint, withIntermediateDirectories: false)
        guard try Shell.run("truncate", "-s", kind == "xfs" ? "320M" : "64M", image.image).status == 0 else {
            print("SKIP power-loss \(kind): cannot create the image file")
            return nil
        }
        let made = try Shell.run([mkfs, "-q"] + (kind == "xfs" ? ["-f"] : ["-F"]) + [image.image])
        guard made.status == 0 else {
            print("SKIP power-loss \(kind): \(mkfs) failed: \(made.output)")
            return nil
        }
        guard try image.mount() else {
            print("SKIP power-loss \(kind): loop devices or mounting are not available here")
            return nil
        }
        return image
    }

    /// Waits until process `pid` is stopped (state T) or gone; a stop takes effect only when the
    /// process returns from the system call it is in, so an fsync in progress completes first.
    static func waitUntilStopped(_ pid: Int32) {
        for _ in 0..<2000 {
            guard let stat = try? procFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return }
            let state = stat[stat.index(close, offsetBy: 2)]
            if state == "T" || state == "t" || state == "Z" || state == "X" { return }
            usleep(1000)
        }
        Issue.record("process \(pid) did not stop")
    }

    static func state(_ path: String) throws -> (scan: [String: String], disagreements: [String]) {
        let vault = try Vault.open(at: path, client: try testClient())
        let state = try crashState(vault)
        return (state.scan, state.pointLookupDisagreements)
    }

    /// The two writers share their group, so their sets go through group commit
    /// (`PreparedItemWrite`: prepared files, exchanges whose shared directory fsync is still to come).
    @Test(arguments: ["ext4", "xfs"])
    func shutdownWhileWritersRunLosesNoAcknowledgedWrite(kind: String) throws {
        try withTemporaryDirectory("powerloss") { dir in
            guard let image = try Self.prepare(kind, in: dir) else { return }
            defer { try? image.unmount() }
            let path = image.mountPoint + "/vault"
            do { _ = try Vault.create(at: path, client: try testClient()) }
            let writers = ["w0", "w1"]
            var model: [String: String] = [:]
            var lost: [String] = []
            var undecryptable: [String] = []
            var acknowledged = 0
            let rounds = Sizes.powerLossRounds
            for round in 0..<rounds {
                let children = try writers.enumerated().map { index, writer in
                    try Helper(["crash-writer", path, testApp, writer, String(round * 1_000_000 + index * 100_000)])
                }
                // Both writers writing before the cut is timed, so that their sets meet in group commit
                // (a writer slow to start on a loaded machine would otherwise write alone).
                let started = children.map { $0.waitFor("ack ", killingAfter: 60) }
                #expect(started.allSatisfy { $0.contains("ack ") }, "a writer wrote nothing: \(started)")
                usleep(UInt32.random(in: 150_000...500_000))
                // A power cut also stops the programs: freeze the writers first, so that nothing they do
                // after the cut can be acknowledged. (Without this, xfs lost an acknowledged add: after a
                // shutdown, a directory fsync whose log items were aborted returns 0 — xfs_dir_fsync has no
                // shutdown check — so a writer could acknowledge a rename that never reached the log.)
                for child in children { _ = Glibc.kill(child.pid, SIGSTOP) }
                for child in children { Self.waitUntilStopped(child.pid) }
                try image.shutdown()
                for child in children { child.kill() }
                let journals = zip(started, children).map { WriterJournal(output: $0 + $1.finish().output) }
                try image.unmount()
                guard try image.mount() else {
                    Issue.record("cannot mount the \(kind) image again")
                    return
                }
                let state = try Self.state(path)
                #expect(state.disagreements.isEmpty, "\(state.disagreements)")
                for (writer, journal) in zip(writers, journals) {
                    let prefix = writer + "-"
                    let (before, after) = journal.outcomes(of: model, prefix: prefix)
                    acknowledged += journal.acknowledged.count
                    let actual = state.scan.filter { $0.key.hasPrefix(prefix) }
                    if actual != before && actual != after {
                        lost.append("\(kind) round \(round) \(writer): expected \(before) or \(after), found \(actual)")
                    }
                    WriterJournal.settle(&model, prefix: prefix, at: actual)
                }
                undecryptable += try decryptEveryItem(path).failures
            }
            #expect(lost.isEmpty, "\(lost.prefix(3))")
            #expect(undecryptable.isEmpty, "\(undecryptable.prefix(3))")
            #expect(acknowledged > rounds)
            let slots = groupCommitSlotsUsed(in: path, group: testApp)
            #expect(slots > 0, "no set went through group commit")
            figure(
                "power-loss-\(kind)",
                "\(rounds) shutdowns (xfs_io shutdown, no log flush) of a loop-mounted \(kind) with 2 writers: "
                    + "\(acknowledged) acknowledged operations, \(lost.count) lost, \(undecryptable.count) undecryptable"
                    + (slots > 0 ? ", \(slots) group-commit slots used" : "")
            )
        }
    }

    /// The control: acknowledged writes without fsync do not survive the same shutdown.
    @Test(arguments: ["ext4", "xfs"])
    func theControlWithoutFsyncLosesAcknowledgedWrites(kind: String) throws {
        try withTemporaryDirectory("powerloss-control") { dir in
            guard let image = try Self.prepare(kind, in: dir) else { return }
            defer { try? image.unmount() }
            let control = image.mountPoint + "/control"
            try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: false)
            // Make the empty directory itself durable, so that only the writes are at stake.
            _ = try Shell.run("sync")
            let count = 200
            let result = try runHelper(["unsynced-writer", control, String(count)])
            let acknowledged = result.output.split(separator: "\n").filter { $0.hasPrefix("ack ") }.count
            #expect(acknowledged == count, "\(result.errors)")
            try image.shutdown()
            try image.unmount()
            guard try image.mount() else {
                Issue.record("cannot mount the \(kind) image again")
                return
            }
            var intact = 0
            for i in 0..<count {
                let expected = String(repeating: "value-\(i)\n", count: 64)
                if let data = FileManager.default.contents(atPath: control + "/file-\(i)"),
                    String(decoding: data, as: UTF8.self) == expected
                {
                    intact += 1
                }
            }
            #expect(intact < count, "the control lost nothing: the shutdown does not simulate a power loss")
            figure(
                "power-loss-control-\(kind)",
                "writer without fsync: \(count - intact) of \(count) acknowledged files lost or torn")
        }
    }
}
