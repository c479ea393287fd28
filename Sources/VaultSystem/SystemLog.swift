internal import CVaultSystem

/// The system log (`syslog(3)`, which journald reads): for the few events an operator must be able to
/// find afterwards, such as an accepted rollback of a fleet group. Never given a secret.
package enum SystemLog {
    /// Logs `message` at notice level (the process keeps its own ident: start messages with `vault:`).
    package static func notice(_ message: String) {
        vsys_syslog_notice(message)
    }
}
