import Vault
import VaultSystem

/// `vault restore`: makes an old version of a secret current again.
package struct RestoreCommand: Sendable, Hashable {
    /// The item (a generic password).
    package var service: String
    package var account: String
    /// The version to restore.
    package var version: UInt64

    static let info = CommandInfo(
        name: "restore",
        synopsis: "vault restore --version N SERVICE [ACCOUNT]",
        summary: "make an old version of a secret current again",
        details: """
            Makes version N of the item (`vault history` lists them) its current value, as a new
            version: history is never rewritten, so a restore can be undone in turn. It also brings
            back an item removed by `vault rm`, until its versions are pruned or purged. Prints the new
            version's number. A version that is not kept is exit status 1.
            """,
        options: [.value("version", "N", "the version to restore (see `vault history`)")],
        operands: ItemName.operands,
        make: { parsed throws(UsageError) in
            let operands = try parsed.operands(["SERVICE", "ACCOUNT"], minimum: 1, command: "restore")
            guard let text = parsed.value("version") else {
                throw UsageError("--version N is required; `vault history` lists the versions", command: "restore")
            }
            return .restore(
                RestoreCommand(
                    service: operands[0], account: operands.count > 1 ? operands[1] : "",
                    version: try RestoreCommand.versionNumber(text, command: "restore", allowingZero: false)))
        })

    /// The number given to `--version` (or `--if-version`), checked.
    static func versionNumber(_ text: String, command: String, option: String = "--version", allowingZero: Bool)
        throws(UsageError) -> UInt64
    {
        guard let number = UInt64(text), allowingZero || number > 0 else {
            throw UsageError(
                "\(option) needs a version number (a whole number from \(allowingZero ? 0 : 1)); "
                    + "`vault history` lists them",
                command: command)
        }
        return number
    }

    func run(in context: Context) throws(CLIError) {
        let key = try context.itemKey(service: service, account: account)
        let vault = try context.openVault()
        // Asked first so that a version that is not kept is said as such, not as a missing item.
        let kept = try context.attempt(vault, key.description) { () throws(VaultError) in try vault.history(of: key) }
        guard kept.contains(where: { $0.number == version }) else {
            throw CLIError(
                .notFound, key.description,
                "has no version \(version); it keeps \(kept.map { String($0.number) }.joined(separator: ", "))")
        }
        let restored = try context.attempt(vault, key.description) { () throws(VaultError) in
            try vault.restore(key, version: version)
        }
        try context.write("restored version \(version) of \(key) as version \(restored)\n")
    }
}
