internal import Glibc
import VaultCLI
import VaultSystem

/// The `vault` executable: everything is in the VaultCLI library.
@main
struct VaultMain {
    static func main() {
        // Before anything is opened: a standard stream that a service manager or cron left closed gets
        // /dev/null, so that no vault file takes its number and receives what the tool prints there.
        try? ProcessIdentity.openClosedStandardStreams()
        // A crash must not print key or secret bytes (Swift's backtracer dumps memory that registers
        // point to) nor leave a core file (`fs.suid_dumpable=2` writes one even for a non-dumpable
        // process), and a file-size limit (ulimit -f) must fail a write with EFBIG, leaving the old
        // value, instead of killing the process with SIGXFSZ. See docs/RELIABILITY.md.
        ProcessIdentity.disableCrashBacktraces()
        try? ProcessIdentity.disableCoreFiles()
        ProcessIdentity.ignoreFileSizeLimitSignal()
        switch ProcessIdentity.commandLineArguments() {
        case .success(let arguments):
            exit(VaultCLI.run(arguments))
        case .failure(let invalid):
            exit(VaultCLI.refuseInvalidArgument(invalid))
        }
    }
}
