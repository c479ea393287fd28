import FoundationEssentials
import Vault

#if canImport(Glibc)
    import Glibc
#endif

/// A helper process for the multi-process tests: each subcommand hammers one vault and reports
/// failures on standard error with a non-zero exit.
///
///     vault-test-helper upsert PATH APP COUNT KEYS WRITER   add-or-update keys k0..k(KEYS-1), COUNT times
///     vault-test-helper add PATH APP COUNT WRITER           add COUNT distinct items
///     vault-test-helper device-id PATH APP KEY              print "<uuid> <created>"
///     vault-test-helper increment PATH APP COUNT            COUNT atomic increments of one counter item
///
/// and the reliability subcommands of `ReliabilityCommands`.
@main
struct VaultTestHelper {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            try run(arguments)
        } catch {
            FileHandleLike.standardError("vault-test-helper: \(error)\n")
            exit(1)
        }
    }

    static func run(_ arguments: [String]) throws {
        if try ReliabilityCommands.runWithoutVault(arguments) { return }
        guard arguments.count >= 3 else { throw HelperError.usage }
        let vault = try Vault.open(
            at: arguments[1], client: try Client(applicationIdentifier: arguments[2]), createIfMissing: true)
        switch arguments[0] {
        case "upsert":
            let count = Int(arguments[3])!
            let keys = Int(arguments[4])!
            let writer = arguments[5]
            for i in 0..<count {
                try vault.set(Data("\(writer)-\(i)".utf8), for: try ItemKey(service: "shared", account: "k\(i % keys)"))
            }
        case "add":
            let count = Int(arguments[3])!
            let writer = arguments[4]
            for i in 0..<count {
                try vault.add(
                    .genericPassword, attributes: ItemAttributes(service: "distinct", account: "\(writer)-\(i)"),
                    data: Data("\(i)".utf8))
            }
        case "device-id":
            let (identifier, created) = try vault.deviceIdentifier(for: arguments[3])
            print("\(identifier.uuidString) \(created)")
        case "increment":
            let count = Int(arguments[3])!
            let key = try ItemKey(service: "counter", account: "value")
            for _ in 0..<count {
                try vault.modify(key) { current in
                    let value = current.flatMap { Int(String(decoding: $0, as: UTF8.self)) } ?? 0
                    return Data(String(value + 1).utf8)
                }
            }
        default:
            guard try ReliabilityCommands.run(arguments, vault: vault) else { throw HelperError.usage }
        }
    }

    enum HelperError: Error { case usage }
}

enum FileHandleLike {
    static func standardError(_ text: String) {
        var text = text
        text.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
