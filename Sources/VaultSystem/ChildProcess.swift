internal import CVaultSystem
internal import Glibc

/// Runs a program as a child process (`posix_spawn`), for tools that measure whole processes: no
/// shell, standard input from a file (or /dev/null), standard output and error to /dev/null.
package enum ChildProcess {
    /// How a child ended and what it cost.
    package struct Result: Sendable, Equatable {
        /// The exit status (0...255), or 128 + the signal number when a signal ended it.
        package let exitStatus: Int32
        /// The child's peak resident set size in KiB (`ru_maxrss` from wait4).
        package let peakResidentKilobytes: Int
    }

    /// Replaces this process with `executable` (`execv`), `arguments` its whole argv (argv[0] first),
    /// the environment and descriptors kept; returns only on failure, with the reason.
    package static func replaceProcess(with executable: String, arguments: [String]) -> Errno {
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        execv(executable, argv)
        return Errno(rawValue: errno)
    }

    /// Starts `executable` with `arguments` (not including argv[0]) and `environment` ("NAME=value"
    /// entries; nil keeps this process's), waits for it, and returns its status and peak memory.
    package static func run(
        _ executable: String,
        arguments: [String],
        environment: [String]? = nil,
        standardInputPath: String = "/dev/null"
    ) throws(Errno) -> Result {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, standardInputPath, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Nothing else of this process's: a descriptor the child (or a daemon it leaves running) kept
        // open could be another waiter's pipe, whose end of file would then never come.
        _ = vsys_spawn_close_from(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let status: Int32
        if let environment {
            let envp = environment.map { strdup($0) } + [nil]
            defer { for pointer in envp { free(pointer) } }
            status = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        } else {
            status = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        }
        guard status == 0 else { throw Errno(rawValue: status) }
        var waitStatus: Int32 = 0
        var usage = rusage()
        while wait4(pid, &waitStatus, 0, &usage) == -1 {
            let error = Errno.current
            if error != .interrupted { throw error }
        }
        return Result(
            exitStatus: Termination(waitStatus: waitStatus).shellStatus, peakResidentKilobytes: Int(usage.ru_maxrss))
    }

    /// Runs `executable` with `arguments` (not including argv[0]), standard input and error on
    /// /dev/null and a plain environment (`PATH=/usr/bin:/bin`, `LC_ALL=C`), and returns its exit
    /// status with the first `limit` bytes of its standard output (the rest is read and dropped). Where
    /// the process ignores SIGCHLD (the status is then lost), the status is 0 when the program wrote
    /// anything, else 1.
    /// With `mergingErrors`, standard error goes where standard output does.
    package static func output(
        of executable: String, arguments: [String], limit: Int = 1 << 20, mergingErrors: Bool = false
    ) throws(Errno) -> (status: Int32, output: [UInt8]) {
        var ends: [Int32] = [-1, -1]
        guard vsys_pipe_close_on_exec(&ends) == 0 else { throw Errno.current }
        let reader = FileDescriptor(rawValue: ends[0])
        defer { try? reader.close() }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], 1)
        if mergingErrors {
            posix_spawn_file_actions_adddup2(&actions, ends[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        _ = vsys_spawn_close_from(&actions, 3)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let environment: [String] = ["PATH=/usr/bin:/bin", "LC_ALL=C"]
        let envp = environment.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        // The write end becomes the child's standard output (dup2 clears close-on-exec on the copy).
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        _ = Glibc.close(ends[1])
        guard spawned == 0 else { throw Errno(rawValue: spawned) }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = (try? buffer.withUnsafeMutableBytes { try reader.read(into: $0) }) ?? 0
            if count <= 0 { break }
            if output.count < limit { output += buffer[..<min(count, limit - output.count)] }
        }
        var waitStatus: Int32 = 0
        while waitpid(pid, &waitStatus, 0) == -1 {
            let error = Errno.current
            if error == .interrupted { continue }
            // A host that ignores SIGCHLD has the kernel reap its children: the status is gone, and the
            // output is all there is to go by.
            if error.rawValue == ECHILD { return (output.isEmpty ? 1 : 0, output) }
            throw error
        }
        return (Termination(waitStatus: waitStatus).shellStatus, output)
    }

    /// How a program that `runForwardingSignals` started ended.
    package enum Termination: Sendable, Equatable {
        /// It exited with this status (0...255).
        case exited(Int32)
        /// A signal ended it.
        case signaled(Int32)

        /// How the wait status `waitStatus` (of `waitpid`) says the program ended.
        init(waitStatus: Int32) {
            let signal = waitStatus & 0x7f
            self = signal == 0 ? .exited((waitStatus >> 8) & 0xff) : .signaled(signal)
        }

        /// The shell's number for it: the exit status, or 128 + the signal number.
        package var shellStatus: Int32 {
            switch self {
            case .exited(let status): return status
            case .signaled(let signal): return 128 + signal
            }
        }
    }

    /// Starts the program at `executable` with `arguments` (argv[0] first) and `environment` (entries
    /// `NAME=value`, without NUL bytes), passes on the signals sent to this process that a supervisor
    /// should (`vsys_run_forwarding_signals`), and waits for it to end. The environment can hold secrets
    /// the caller chose to put there: `environment` is zeroed before the program starts, and this
    /// process's own copy once the program has its own, so none is kept while it runs.
    package static func runForwardingSignals(
        _ executable: String, arguments: [String], environment: inout [[UInt8]]
    ) throws(SystemCallError) -> Termination {
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp: [UnsafeMutablePointer<CChar>?] =
            environment.map { entry in
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: entry.count + 1)
                entry.withUnsafeBytes { bytes in
                    UnsafeMutableRawPointer(copy).copyMemory(from: bytes.baseAddress!, byteCount: entry.count)
                }
                copy[entry.count] = 0
                return copy
            } + [nil]
        for index in environment.indices {
            environment[index].withUnsafeMutableBytes {
                if let base = $0.baseAddress { explicit_bzero(base, $0.count) }
            }
        }
        defer {
            for pointer in envp {
                guard let pointer else { continue }
                explicit_bzero(pointer, strlen(pointer))
                pointer.deallocate()
            }
        }
        var waitStatus: Int32 = 0
        let failure = executable.withCString { path in
            argv.withUnsafeBufferPointer { argumentList in
                envp.withUnsafeBufferPointer { environmentList in
                    vsys_run_forwarding_signals(
                        path, argumentList.baseAddress, environmentList.baseAddress, &waitStatus)
                }
            }
        }
        guard failure == 0 else { throw SystemCallError(systemCall: .startProcess, errno: Errno(rawValue: failure)) }
        return Termination(waitStatus: waitStatus)
    }

    /// This process's environment as `NAME=value` entries, byte for byte, without those whose name is in
    /// `removing`.
    package static func inheritedEnvironment(removing: Set<String> = []) -> [[UInt8]] {
        guard var entry = vsys_environment() else { return [] }
        var entries: [[UInt8]] = []
        while let pointer = entry.pointee {
            let bytes = [UInt8](UnsafeRawBufferPointer(start: pointer, count: Glibc.strlen(pointer)))
            let name = String(decoding: bytes.prefix { $0 != UInt8(ascii: "=") }, as: UTF8.self)
            if !removing.contains(name) { entries.append(bytes) }
            entry += 1
        }
        return entries
    }

    /// The program a command names, as a shell finds it: `command` itself when it holds a `/`, else the
    /// first executable regular file of that name in the directories of `searchPath` (`$PATH`; an empty
    /// entry is the working directory); nil when there is none.
    package static func executablePath(for command: String, searchPath: String?) -> String? {
        if command.contains("/") { return command }
        let directories = (searchPath ?? "/usr/local/bin:/usr/bin:/bin").split(
            separator: ":", omittingEmptySubsequences: false)
        for directory in directories {
            let candidate = (directory.isEmpty ? "." : String(directory)) + "/" + command
            var status = stat()
            guard stat(candidate, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                access(candidate, X_OK) == 0
            else { continue }
            return candidate
        }
        return nil
    }
}
