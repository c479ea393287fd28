import Foundation
import Vault
import VaultFleet

#if canImport(Glibc)
    import Glibc
#endif

/// A process for the fleet-group tests to spawn: one "host"'s process that increments a counter item
/// in a fleet group through the Swift API.
///
///     vault-fleet-peer increment VAULT_DIR GROUP SERVICE ACCOUNT COUNT [SECONDS]
///
/// opens the vault at VAULT_DIR (its key from the environment, as `Vault.open` finds it) with
/// `VaultFleet`'s etcd client, and does COUNT increments of the decimal number held by SERVICE/ACCOUNT in GROUP, each
/// an atomic read-modify-write (`Vault.modify`). It then prints one line:
///
///     done acknowledged=N failed=M elapsed-ms=T [first-error=…]
///
/// and exits 0 when every increment was acknowledged, else 1 (2 for bad arguments). SIGALRM ends it
/// after SECONDS (default 300), so that no test waits on it forever.
@main
struct VaultFleetPeer {
    static let usage = "usage: vault-fleet-peer increment VAULT_DIR GROUP SERVICE ACCOUNT COUNT [SECONDS]"

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count == 6 || arguments.count == 7, arguments[0] == "increment",
            let count = Int(arguments[5]), count >= 0,
            let seconds = arguments.count == 7 ? UInt32(arguments[6]) : 300
        else {
            FileHandle.standardError.write(Data((usage + "\n").utf8))
            exit(2)
        }
        alarm(seconds)
        func finish(_ line: String, status: Int32) -> Never {
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
            exit(status)
        }
        let key: ItemKey
        let vault: Vault
        do {
            let group = try AccessGroup(arguments[2])
            key = try ItemKey(service: arguments[3], account: arguments[4], group: group)
            vault = try Vault.open(
                at: arguments[1], client: try Client(applicationIdentifier: "svc", accessGroups: [group.rawValue]),
                fleet: .etcd())
        } catch {
            finish("setup-failed error=\(error)", status: 1)
        }
        var acknowledged = 0
        var failed = 0
        var firstError: String?
        let started = Date()
        for _ in 0..<count {
            do {
                try vault.modify(key) { old in
                    let value = Int(String(decoding: old ?? Data("0".utf8), as: UTF8.self)) ?? 0
                    return Data(String(value + 1).utf8)
                }
                acknowledged += 1
            } catch {
                failed += 1
                if firstError == nil { firstError = "\(error)" }
            }
        }
        let elapsed = Int(Date().timeIntervalSince(started) * 1000)
        let line =
            "done acknowledged=\(acknowledged) failed=\(failed) elapsed-ms=\(elapsed)"
            + (firstError.map { " first-error=\($0)" } ?? "")
        finish(line, status: failed == 0 ? 0 : 1)
    }
}
