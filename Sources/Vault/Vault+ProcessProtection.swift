import VaultSystem

extension Vault {
    /// Protects the calling process as the `vault` tool protects itself; for a service's `main`, before
    /// it opens a vault. A library does not change these process-wide settings behind its caller's
    /// back, so a service calls this (or sets the same from outside: `LimitCORE=0` and
    /// `Environment=SWIFT_BACKTRACE=enable=no` in its systemd unit):
    /// - closed standard streams (0, 1, 2) get `/dev/null`, so that no file opened later takes their
    ///   numbers and receives what the program prints;
    /// - Swift's crash backtracer is off (it prints memory that registers point to: secrets);
    /// - the core file size limit is 0 (`RLIMIT_CORE`), which holds even where `fs.suid_dumpable=2`
    ///   makes the kernel dump non-dumpable processes;
    /// - the process is not dumpable (`PR_SET_DUMPABLE` 0; the vault also sets this when it loads a key).
    public static func protectProcess() {
        try? ProcessIdentity.openClosedStandardStreams()
        ProcessIdentity.disableCrashBacktraces()
        try? ProcessIdentity.disableCoreFiles()
        try? ProcessIdentity.disableDumps()
    }
}
