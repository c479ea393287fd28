import Glibc
import VaultCLI
import VaultSystem

/// The `vault` executable: everything is in the VaultCLI library.
@main
struct VaultMain {
    static func main() {
        // A crash must not print key or secret bytes (Swift's backtracer dumps memory that registers
        // point to), and a file-size limit (ulimit -f) must fail a write with EFBIG, leaving the old
        // value, instead of killing the process with SIGXFSZ. See docs/RELIABILITY.md.
        ProcessIdentity.disableCrashBacktraces()
        ProcessIdentity.ignoreFileSizeLimitSignal()
        exit(VaultCLI.run(CommandLine.arguments))
    }
}
