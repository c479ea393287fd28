internal import Glibc

extension ProcessIdentity {
    /// The signals on which Swift's runtime starts its crash backtracer.
    static let backtracedSignals: [Int32] = [SIGQUIT, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGTRAP]

    /// Turns off Swift's crash backtracer for this process by restoring the default action of the
    /// signals it catches; a crash then just ends the process (and, once `disableDumps` ran, leaves no
    /// core file). The backtracer prints the registers with 16 bytes of the memory each points to,
    /// which can be key or secret bytes, and `PR_SET_DUMPABLE` 0 does not stop it: the crashed
    /// process serves the memory reads itself. For programs (the CLI), not libraries: it changes
    /// process-wide signal dispositions, which is the program's decision. Setting
    /// `SWIFT_BACKTRACE=enable=no` in the environment has the same effect from outside.
    package static func disableCrashBacktraces() {
        for signalNumber in backtracedSignals {
            _ = signal(signalNumber, SIG_DFL)
        }
    }

    /// Makes a write past the file-size limit (`ulimit -f`, RLIMIT_FSIZE) fail with EFBIG, which the
    /// vault reports with the old value intact, instead of killing the process with SIGXFSZ. For
    /// programs, not libraries, like `disableCrashBacktraces`.
    package static func ignoreFileSizeLimitSignal() {
        _ = signal(SIGXFSZ, SIG_IGN)
    }
}
