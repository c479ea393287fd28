import Vault
import VaultSystem

/// `--kdf-cost`: how much Argon2id work protects a passphrase-wrapped key. Only new wrappings use it;
/// reading always uses the cost recorded in the file.
package enum KeyDerivationCost: String, Sendable, Hashable, CaseIterable {
    /// 3 passes over 256 MiB (the default).
    case moderate
    /// 2 passes over 64 MiB.
    case interactive
    /// 1 pass over 8 KiB: for tests, never for a real vault.
    case minimum

    static let spec = OptionSpec.value(
        "kdf-cost", "COST", "Argon2id cost of a new passphrase: moderate (default), interactive, minimum (tests only)",
        kind: .choice(allCases.map(\.rawValue)))

    static func parse(_ parsed: ParsedArguments, command: String) throws(UsageError) -> KeyDerivationCost {
        guard let value = parsed.value("kdf-cost") else { return .moderate }
        guard let cost = KeyDerivationCost(rawValue: value) else {
            throw UsageError("--kdf-cost is moderate, interactive or minimum, not \"\(value)\"", command: command)
        }
        return cost
    }

    var limits: PassphraseKeyDerivation.Limits {
        switch self {
        case .moderate: return .moderate
        case .interactive: return .interactive
        case .minimum: return .minimum
        }
    }
}
