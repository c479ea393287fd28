import FoundationEssentials
import VaultSystem

/// Where a vault lives when the caller does not say: `$VAULT_DIR`, else `/var/lib/vault` for root,
/// else `$XDG_DATA_HOME/vault`, else `~/.local/share/vault`. (A systemd service with
/// `StateDirectory=vault` runs as root or gets `/var/lib/vault` through `VAULT_DIR`.)
public enum VaultLocation {
    /// The default vault path for this process, or nil when neither `VAULT_DIR`, root, `XDG_DATA_HOME`
    /// nor `HOME` gives one.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit = environment["VAULT_DIR"], !explicit.isEmpty { return explicit }
        if ProcessIdentity.effectiveUserID == 0 { return "/var/lib/vault" }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/vault" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.local/share/vault" }
        return nil
    }
}
