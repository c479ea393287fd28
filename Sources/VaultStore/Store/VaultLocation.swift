import FoundationEssentials
import VaultSystem

/// Where a vault lives when the caller does not say: `$VAULT_DIR`, else `/var/lib/vault` for root,
/// else `$XDG_DATA_HOME/vault`, else `~/.local/share/vault`. (A systemd service keeps its own vault in
/// its state directory: `StateDirectory=%N` and `VAULT_DIR=/var/lib/%N/vault`.)
package enum VaultLocation {
    /// The default vault path for this process, or nil when neither `VAULT_DIR`, root, `XDG_DATA_HOME`
    /// nor `HOME` gives one.
    package static func defaultPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
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
    package static func owner(of path: String) -> (userID: UInt32, groupID: UInt32)? {
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

    /// The users other than root who own a directory (or symbolic link) on the way to `path` as it is
    /// written, each component looked at without following a link, down to the last one that exists:
    /// any of them could replace what comes after it. Relative paths start at the working directory.
    package static func owners(along path: String) -> [UInt32] {
        var base = ""
        if !path.hasPrefix("/") {
            guard let cwd = try? FileDescriptor.resolvedPath(".") else { return [] }
            base = cwd == "/" ? "" : cwd
        }
        var owners: [UInt32] = []
        var prefix = FilePath(base)
        for component in FilePath(path).removingTrailingSeparators.string.split(separator: "/") where component != "." {
            prefix = prefix / String(component)
            guard let status = try? FileDescriptor.currentWorkingDirectory.statusAt(prefix.string) else { break }
            if status.ownerID != 0, !owners.contains(status.ownerID) { owners.append(status.ownerID) }
        }
        return owners
    }

    /// Advice for a user who is not the owner of a vault file: the command that works.
    static func runAsOwnerAdvice(_ owner: UInt32) -> String {
        if let user = UserDatabase.user(id: owner) {
            return "run vault as its owner: `runuser -u \(user.name) -- vault …` (root acts as the owner by itself)"
        }
        return "run vault as its owner, uid \(owner) (root acts as the owner by itself)"
    }
}
