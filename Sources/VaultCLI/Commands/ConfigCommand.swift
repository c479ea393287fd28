import Vault
import VaultSystem

/// `vault config`: the vault's settings (how many versions of each item it keeps).
package struct ConfigCommand: Sendable, Hashable {
    /// The setting to show or change (nil: all of them).
    package var name: String?
    /// Its new value.
    package var value: String?

    static let settings = ["versions"]

    static let info = CommandInfo(
        name: "config",
        synopsis: "vault config [versions [N|default]]",
        summary: "show or change the settings of the vault",
        details: """
            Without operands, prints every setting as NAME VALUE lines. `versions` is how many
            previous versions of each item the vault keeps (`vault history`): from 0 (none) to 254,
            10 by default. Lowering it removes the versions past the new bound at once. Changing a
            setting is for the vault's owner.
            """,
        options: [],
        operands: [OperandSpec("NAME", .choice(settings)), OperandSpec("VALUE")],
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["NAME", "VALUE"], minimum: 0, command: "config")
            if let name = operands.first, !settings.contains(name) {
                throw UsageError(
                    "unknown setting; the settings are \(settings.joined(separator: ", "))",
                    command: "config")
            }
            return .config(ConfigCommand(name: operands.first, value: operands.count > 1 ? operands[1] : nil))
        })

    func run(in context: Context) throws(CLIError) {
        let vault = try context.openVault()
        guard let value else {
            try context.write("versions \(vault.versionsKept)\n")
            return
        }
        let count: Int?
        if value == "default" {
            count = nil
        } else if let number = Int(value), (0...Vault.maximumVersionsKept).contains(number) {
            count = number
        } else {
            throw CLIError(
                .usage, "versions",
                "needs a number from 0 to \(Vault.maximumVersionsKept), or \"default\" (10)")
        }
        try context.attempt(vault, "versions") { () throws(VaultError) in try vault.setVersionsKept(count) }
    }
}
