import Glibc
import VaultCLI

/// The `vault` executable: everything is in the VaultCLI library.
@main
struct VaultMain {
    static func main() {
        exit(VaultCLI.run(CommandLine.arguments))
    }
}
