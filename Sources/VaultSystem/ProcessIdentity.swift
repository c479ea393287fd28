internal import CVaultSystem
internal import Glibc

/// Facts about the running process that the vault's permission checks need.
public enum ProcessIdentity {
    /// The effective user id.
    public static var effectiveUserID: UInt32 { Glibc.geteuid() }

    /// Whether the process may be dumped or traced (`PR_GET_DUMPABLE`).
    public static var isDumpable: Bool { vsys_get_dumpable() == 1 }

    /// Turns off core dumps and ptrace attach by the same user for this process (`PR_SET_DUMPABLE` 0);
    /// called once a key is held.
    public static func disableDumps() throws(Errno) {
        if vsys_set_dumpable(0) != 0 { throw Errno.current }
    }
}
