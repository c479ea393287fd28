import Glibc
import VaultStore
import VaultSystem

/// The `vault` tool. Until the full command-line issue lands it knows `init` and `status`.
@main
struct VaultCommand {
    static let usage = """
        usage: vault [--vault DIR] <command>

        commands:
          init      create a new vault (refuses to touch an existing one)
          status    open the vault, check its key file and marker, and print what it holds

        The vault is DIR, else $VAULT_DIR, else /var/lib/vault for root, else
        $XDG_DATA_HOME/vault (~/.local/share/vault).
        """

    static func main() {
        // A crash must not print key or secret bytes (Swift's backtracer dumps memory that registers
        // point to), and a file-size limit (ulimit -f) must fail a write with EFBIG, leaving the old
        // value, instead of killing the process with SIGXFSZ. See docs/RELIABILITY.md.
        ProcessIdentity.disableCrashBacktraces()
        signal(SIGXFSZ, SIG_IGN)
        exit(run(Array(CommandLine.arguments.dropFirst())))
    }

    static func run(_ arguments: [String]) -> Int32 {
        var path: String?
        var command: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--vault" {
                guard index + 1 < arguments.count else { return usageError("--vault needs a directory") }
                path = arguments[index + 1]
                index += 2
                continue
            }
            if argument.hasPrefix("--vault=") {
                path = String(argument.dropFirst("--vault=".count))
            } else if argument == "-h" || argument == "--help" {
                print(usage)
                return 0
            } else if command == nil, !argument.hasPrefix("-") {
                command = argument
            } else {
                return usageError("unexpected argument '\(argument)'")
            }
            index += 1
        }
        guard let command else { return usageError("no command given") }
        guard let vaultPath = path ?? VaultLocation.defaultPath() else {
            return failure("no vault location: set VAULT_DIR or HOME, or pass --vault DIR", code: 2)
        }
        do {
            switch command {
            case "init":
                _ = try VaultStore.create(at: vaultPath)
                return 0
            case "status":
                let store = try VaultStore.open(at: vaultPath)
                let groups = try store.groups()
                var items = 0
                for group in groups { items += try store.itemIDs(in: group).count }
                print("vault: \(vaultPath)")
                print("groups: \(groups.count)")
                print("items: \(items)")
                return 0
            default:
                return usageError("unknown command '\(command)'")
            }
        } catch {
            return failure(error.description, code: exitCode(error.code))
        }
    }

    static func exitCode(_ code: StoreError.Code) -> Int32 {
        switch code {
        case .vaultAlreadyExists: return 3
        case .insecureFile, .permissionDenied: return 4
        case .integrity, .unsupportedFormat: return 6
        case .io, .cryptoUnavailable: return 7
        case .vaultNotFound: return 8
        case .invalidName: return 2
        }
    }

    static func usageError(_ message: String) -> Int32 {
        failure("\(message)\n\n\(usage)", code: 2)
    }

    static func failure(_ message: String, code: Int32) -> Int32 {
        try? FileDescriptor.standardError.writeAll(Array("vault: \(message)\n".utf8))
        return code
    }
}
