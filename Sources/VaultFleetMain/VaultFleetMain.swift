internal import Glibc
import VaultCLI
import VaultFleet
import VaultSystem

/// `vault-fleet`: the `vault` tool, dynamically linked with an etcd client for fleet groups. `vault`
/// (a static executable, which cannot load libcurl) hands a command to it when the command uses a fleet
/// group; it can also be run directly.
@main
struct VaultFleetMain {
    static func main() {
        try? ProcessIdentity.openClosedStandardStreams()
        ProcessIdentity.disableCrashBacktraces()
        try? ProcessIdentity.disableCoreFiles()
        ProcessIdentity.ignoreFileSizeLimitSignal()
        switch ProcessIdentity.commandLineArguments() {
        case .success(let arguments):
            exit(VaultCLI.run(arguments, fleet: .etcd(watching: false)))
        case .failure(let invalid):
            exit(VaultCLI.refuseInvalidArgument(invalid))
        }
    }
}
