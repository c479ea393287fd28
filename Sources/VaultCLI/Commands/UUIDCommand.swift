import Vault
import VaultSystem

/// `vault uuid`: the persistent device identifier for a key, created on first use.
package struct UUIDCommand: Sendable, Hashable {
    /// The key; nil is the vault's own identifier.
    package var key: String?
    /// `--json`: also say whether it was just created.
    package var json: Bool

    static let info = CommandInfo(
        name: "uuid",
        synopsis: "vault uuid [--json] [KEY]",
        summary: "print the persistent device identifier",
        details: """
            Prints the UUID stored under KEY (default: the vault's own identifier), creating it on first
            use; it survives the service being removed and reinstalled. Concurrent first uses all get one
            UUID. With --json, prints {"key", "uuid", "created"}, where "created" says whether this call
            made it.
            """,
        options: [.flag("json", "print the key, the UUID and whether it was just created")],
        operands: [OperandSpec("KEY")],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["KEY"], minimum: 0, command: "uuid")
            return .uuid(UUIDCommand(key: operands.first, json: parsed.flag("json")))
        })

    struct JSON: Encodable {
        var key: String
        var uuid: String
        var created: Bool
    }

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        let key = key ?? Vault.defaultDeviceIdentifierKey
        let (identifier, created) = try context.attempt(vault, "uuid \"\(key)\"") { () throws(VaultError) in
            try vault.deviceIdentifier(for: key)
        }
        // Lower case, as RFC 9562 asks for output and uuidgen prints.
        let text = identifier.uuidString.lowercased()
        if json {
            try context.write(try Output.json(JSON(key: key, uuid: text, created: created)))
        } else {
            try context.write(text + "\n")
        }
    }
}
