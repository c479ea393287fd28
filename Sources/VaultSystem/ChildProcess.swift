internal import CVaultSystem
internal import Glibc

/// Runs a program as a child process (`posix_spawn`), for tools that measure whole processes: no
/// shell, standard input from a file (or /dev/null), standard output and error to /dev/null.
public enum ChildProcess {
    /// How a child ended and what it cost.
    public struct Result: Sendable, Equatable {
        /// The exit status (0...255), or 128 + the signal number when a signal ended it.
        public let exitStatus: Int32
        /// The child's peak resident set size in KiB (`ru_maxrss` from wait4).
        public let peakResidentKilobytes: Int
    }

    /// Replaces this process with `executable` (`execv`), `arguments` its whole argv (argv[0] first),
    /// the environment and descriptors kept; returns only on failure, with the reason.
    public static func replaceProcess(with executable: String, arguments: [String]) -> Errno {
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        execv(executable, argv)
        return Errno(rawValue: errno)
    }

    /// Starts `executable` with `arguments` (not including argv[0]) and `environment` ("NAME=value"
    /// entries; nil keeps this process's), waits for it, and returns its status and peak memory.
    public static func run(
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
        let signal = waitStatus & 0x7f
        let exitStatus = signal == 0 ? (waitStatus >> 8) & 0xff : 128 + signal
        return Result(exitStatus: exitStatus, peakResidentKilobytes: Int(usage.ru_maxrss))
    }
}
