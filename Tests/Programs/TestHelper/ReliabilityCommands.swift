import FoundationEssentials
import Vault
import VaultCrypto
import VaultSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The subcommands that the reliability harnesses (Tests/VaultReliabilityTests) drive. Every line a
/// supervisor reads is written with one write(2), so that a SIGKILL never leaves a line in a buffer.
///
///     crash-writer PATH APP WRITER SEQ [OPS]  random set/delete/move on keys WRITER-k0..k7, printing
///                                             "start SEQ OP ARGS" before and "ack SEQ" after each;
///                                             forever, or OPS operations
///     history-writer PATH APP WRITER SEQ      sets (3 in 4) and deletes of the key ("history", WRITER)
///                                             forever, printing "start SEQ set|del WRITER [VALUE]"
///                                             before and "ack SEQ" after each
///     crash-increment PATH APP                increment the shared counter forever, "start"/"ack" around
///                                             each increment
///     set PATH APP SERVICE ACCOUNT VALUE      store VALUE under (SERVICE, ACCOUNT)
///     hold-lock PATH APP                      take the write lock, print "locked", sleep until killed
///     dumpable PATH APP                       print "before=N after=N" (PR_GET_DUMPABLE around the open)
///     memory-child PATH APP                   store and read back a random secret, print "open", wait
///                                             for a byte on standard input; then close the vault,
///                                             wipe own copies, print "ready", wait again
///     crash-with-secret PATH APP [no-backtrace]
///                                             read the secret of ("crash", "secret"), then crash
///                                             (SIGSEGV) with a pointer to it in a register; with
///                                             no-backtrace, after disableCrashBacktraces()
///     fsize-put PATH APP LIMIT BYTES          RLIMIT_FSIZE = LIMIT, SIGXFSZ ignored, then set a
///                                             BYTES-long secret: prints "ok" or "error <message>"
///     fork-nonces COUNT                       fork; parent and child each print COUNT nonces
///                                             ("p HEX" / "c HEX")
///     fork-writers PATH APP CHILDREN COUNT    open the vault and write through it, then fork CHILDREN
///                                             children that each set COUNT values of their own key and
///                                             of a shared one through the inherited handle while the
///                                             parent does the same; exit 1 if any process failed
///     protect-process                         Vault.protectProcess(), then print "core=N dumpable=N"
///     unsynced-writer DIR COUNT               the power-loss control: writes COUNT files by
///                                             write + rename without any fsync, "ack I" after each
enum ReliabilityCommands {
    /// Runs a subcommand that needs no vault; false when `arguments` names none.
    static func runWithoutVault(_ arguments: [String]) throws -> Bool {
        switch arguments.first {
        case "fork-nonces":
            try forkNonces(count: Int(arguments[1])!)
        case "unsynced-writer":
            try unsyncedWriter(directory: arguments[1], count: Int(arguments[2])!)
        case "dumpable":
            let before = ProcessIdentity.isDumpable
            let vault = try Vault.open(
                at: arguments[1], client: try Client(applicationIdentifier: arguments[2]), createIfMissing: true)
            _ = vault
            say("before=\(before ? 1 : 0) after=\(ProcessIdentity.isDumpable ? 1 : 0)\n")
        case "memory-child":
            try memoryChild(path: arguments[1], app: arguments[2])
        case "protect-process":
            Vault.protectProcess()
            let limit = (try? ProcessIdentity.coreFileLimit()).map(String.init) ?? "unknown"
            say("core=\(limit) dumpable=\(ProcessIdentity.isDumpable ? 1 : 0)\n")
        default:
            return false
        }
        return true
    }

    /// Runs a subcommand on an open vault; false when `arguments` names none.
    static func run(_ arguments: [String], vault: Vault) throws -> Bool {
        switch arguments[0] {
        case "fork-writers":
            try forkWriters(vault: vault, children: Int(arguments[3])!, count: Int(arguments[4])!)
        case "crash-writer":
            let ops = arguments.count > 5 ? Int(arguments[5])! : Int.max
            try crashWriter(vault, writer: arguments[3], firstSequence: Int(arguments[4])!, operations: ops)
        case "history-writer":
            try historyWriter(vault, writer: arguments[3], firstSequence: Int(arguments[4])!)
        case "crash-increment":
            // "start" before and "ack" after each atomic increment of the shared counter, forever.
            let key = try ItemKey(service: "counter", account: "value")
            while true {
                say("start\n")
                try vault.modify(key) { current in
                    let value = current.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                    return Data(String(value + 1).utf8)
                }
                say("ack\n")
            }
        case "set":
            try vault.set(Data(arguments[5].utf8), for: try ItemKey(service: arguments[3], account: arguments[4]))
        case "hold-lock":
            try vault.modify(try ItemKey(service: "lock", account: "holder")) { current in
                say("locked\n")
                while true { sleep(60) }
                return current
            }
        case "crash-with-secret":
            guard let secret = try vault.data(for: try ItemKey(service: "crash", account: "secret")) else {
                throw ReliabilityError("no secret stored under crash/secret")
            }
            if arguments.count > 3, arguments[3] == "no-backtrace" { ProcessIdentity.disableCrashBacktraces() }
            say("crashing\n")
            secret.withUnsafeBytes { raw in crash(holding: raw.baseAddress!) }
        case "fsize-put":
            // A library must not change signal dispositions behind its caller's back; this process is
            // the caller, and it wants write(2) to fail with EFBIG instead of dying of SIGXFSZ.
            ProcessIdentity.ignoreFileSizeLimitSignal()
            var limit = rlimit(rlim_cur: rlim_t(Int(arguments[3])!), rlim_max: rlim_t(Int(arguments[3])!))
            guard setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0 else {
                throw ReliabilityError("setrlimit failed")
            }
            let bytes = Data(repeating: 0x61, count: Int(arguments[4])!)
            do {
                try vault.set(bytes, for: try ItemKey(service: "fsize", account: "big"))
                say("ok\n")
            } catch {
                say("error \(error.status.name) \(error.message)\n")
            }
        default:
            return false
        }
        return true
    }

    // MARK: Crash writer

    /// Keeps its own key space, so that the supervisor's journal is one sequence per writer.
    static func crashWriter(_ vault: Vault, writer: String, firstSequence: Int, operations: Int) throws {
        let keyCount = 8
        func key(_ k: Int) throws -> ItemKey { try ItemKey(service: "crash", account: "\(writer)-k\(k)") }
        var present = Set<Int>()
        for k in 0..<keyCount where try vault.data(for: key(k)) != nil { present.insert(k) }
        var sequence = firstSequence
        var done = 0
        while done < operations {
            let k = Int.random(in: 0..<keyCount)
            let absent = (0..<keyCount).filter { !present.contains($0) }
            let roll = Int.random(in: 0..<4)
            if !present.contains(k) || roll < 2 {
                let value = "\(writer)-\(sequence)"
                say("start \(sequence) set \(writer)-k\(k) \(value)\n")
                // `set`: it goes through group commit (`PreparedItemWrite`).
                try vault.set(Data(value.utf8), for: try key(k))
                present.insert(k)
            } else if roll == 2 || absent.isEmpty {
                say("start \(sequence) del \(writer)-k\(k)\n")
                try vault.remove(try key(k))
                present.remove(k)
            } else {
                let target = absent.randomElement()!
                say("start \(sequence) move \(writer)-k\(k) \(writer)-k\(target)\n")
                var attributes = ItemAttributes()
                attributes.account = "\(writer)-k\(target)"
                try vault.update(
                    .genericPassword(service: "crash", account: "\(writer)-k\(k)"),
                    with: ItemChanges(attributes: attributes))
                present.remove(k)
                present.insert(target)
            }
            say("ack \(sequence)\n")
            sequence += 1
            done += 1
        }
    }

    static func historyWriter(_ vault: Vault, writer: String, firstSequence: Int) throws {
        let key = try ItemKey(service: "history", account: writer)
        var present = try vault.data(for: key) != nil
        var sequence = firstSequence
        while true {
            if present && Int.random(in: 0..<4) == 0 {
                say("start \(sequence) del \(writer)\n")
                try vault.remove(key)
                present = false
            } else {
                let value = "\(writer)-\(sequence)"
                say("start \(sequence) set \(writer) \(value)\n")
                try vault.set(Data(value.utf8), for: key)
                present = true
            }
            say("ack \(sequence)\n")
            sequence += 1
        }
    }

    // MARK: Memory

    static func memoryChild(path: String, app: String) throws {
        do {
            let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: app), createIfMissing: true)
            var raw = try SecureRandom.bytes(count: 24)
            // The secret as text (hex), so that the scanner can also look for it in decoded form.
            var secret = Data(hexString(raw).utf8)
            raw.wipe()
            let key = try ItemKey(service: "memory", account: "secret")
            try vault.set(secret, for: key)
            var back = try vault.data(for: key)
            guard back == secret else { throw ReliabilityError("the secret did not read back") }
            // The caller's own copies are the caller's business: wipe them in place.
            secret.wipe()
            back!.wipe()
            back = nil
            say("open\n")
            var byte: UInt8 = 0
            _ = read(0, &byte, 1)
        }
        say("ready\n")
        var byte: UInt8 = 0
        _ = read(0, &byte, 1)
    }

    @inline(never)
    static func crash(holding pointer: UnsafeRawPointer) -> Never {
        // Keep the secret's address live in a register and on the stack, then fault.
        withExtendedLifetime(pointer) {
            let bad = UnsafeMutablePointer<UInt8>(bitPattern: 16)!
            bad.pointee = pointer.load(as: UInt8.self)
        }
        fatalError("unreachable")
    }

    // MARK: Nonces across fork

    static func forkNonces(count: Int) throws {
        _ = try XChaCha20Poly1305.randomNonce()  // libsodium is initialised before the fork
        let pid = fork()
        guard pid >= 0 else { throw ReliabilityError("fork failed") }
        let tag = pid == 0 ? "c" : "p"
        var lines = ""
        for _ in 0..<count {
            lines += "\(tag) \(hexString(try XChaCha20Poly1305.randomNonce()))\n"
            if lines.utf8.count > 3000 {
                say(lines)
                lines = ""
            }
        }
        say(lines)
        if pid == 0 { _exit(0) }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// A pre-fork server's pattern: one handle, opened and used before the fork, written through by
    /// the parent and every child at once. Each process sets "fork-<n>" to its last value and the
    /// shared key "fork-shared" along the way; the supervisor checks every file afterwards.
    static func forkWriters(vault: Vault, children: Int, count: Int) throws {
        try vault.set(Data("parent-0".utf8), for: try ItemKey(service: "fork", account: "parent"))
        func write(_ name: String) -> Bool {
            do {
                for i in 0..<count {
                    try vault.set(Data("\(name)-\(i)".utf8), for: try ItemKey(service: "fork", account: name))
                    try vault.set(Data("\(name)-\(i)".utf8), for: try ItemKey(service: "fork", account: "shared"))
                }
                return true
            } catch {
                say("\(name): \(error)\n")
                return false
            }
        }
        var pids: [pid_t] = []
        for n in 0..<children {
            let pid = fork()
            guard pid >= 0 else { throw ReliabilityError("fork failed") }
            if pid == 0 { _exit(write("child-\(n)") ? 0 : 1) }
            pids.append(pid)
        }
        var failed = !write("parent")
        for pid in pids {
            var status: Int32 = 0
            waitpid(pid, &status, 0)
            if status != 0 { failed = true }
        }
        if failed { throw ReliabilityError("a writer failed") }
    }

    // MARK: Power-loss control

    /// Writes files the way a careless program does (no fsync anywhere): a file system crash must be
    /// able to lose acknowledged writes here, or the power-loss test proves nothing.
    static func unsyncedWriter(directory: String, count: Int) throws {
        let dir = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(directory)
        for i in 0..<count {
            let temp = ".tmp.control"
            let fd = try dir.openAt(temp, [.writeOnly, .create, .truncate])
            try fd.writeAll(Array(String(repeating: "value-\(i)\n", count: 64).utf8))
            try fd.close()
            try dir.renameAt(temp, to: "file-\(i)")
            say("ack \(i)\n")
        }
    }

    // MARK: Output

    static func say(_ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }

    static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

struct ReliabilityError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
