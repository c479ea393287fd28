import FoundationEssentials
import VaultSystem

/// Where a vault lives when the caller does not say: `$VAULT_DIR`, else `/var/lib/vault` for root,
/// else `$XDG_DATA_HOME/vault`, else `~/.local/share/vault`. (A systemd service keeps its own vault in
/// its state directory: `StateDirectory=%N` and `VAULT_DIR=/var/lib/%N/vault`.)
public enum VaultLocation {
    /// The default vault path for this process, or nil when neither `VAULT_DIR`, root, `XDG_DATA_HOME`
    /// nor `HOME` gives one.
    public static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let explicit = environment["VAULT_DIR"], !explicit.isEmpty { return explicit }
        if ProcessIdentity.effectiveUserID == 0 { return "/var/lib/vault" }
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return (FilePath(data) / "vault").string }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return (FilePath(home) / ".local/share/vault").string
        }
        return nil
    }

    /// The user a vault at `path` belongs to: the owner of the directory, or for a vault not made yet,
    /// of the nearest directory above it that exists (a service's `StateDirectory=` made by systemd).
    /// Nil when nothing on the path can be inspected.
    public static func owner(of path: String) -> (userID: UInt32, groupID: UInt32)? {
        var current = FilePath(path).removingTrailingSeparators
        while true {
            if let status = try? FileDescriptor.currentWorkingDirectory.statusAt(current.string) {
                return (status.ownerID, status.groupID)
            }
            let parent = current.parent
            if parent == current { return nil }
            current = parent
        }
    }

    /// Advice for a user who is not the owner of a vault file: the command that works.
    static func runAsOwnerAdvice(_ owner: UInt32) -> String {
        if let user = UserDatabase.user(id: owner) {
            return "run vault as its owner: `runuser -u \(user.name) -- vault …` (root acts as the owner by itself)"
        }
        return "run vault as its owner, uid \(owner) (root acts as the owner by itself)"
    }
}
