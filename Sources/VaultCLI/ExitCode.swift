import Vault
import VaultSystem

/// The tool's exit statuses, documented in `vault --help` and the README.
package enum ExitCode: Int32, Sendable, CaseIterable {
    /// Success.
    case success = 0
    /// No item matches (so that `if vault get x >/dev/null` reads like grep).
    case notFound = 1
    /// The command line is wrong, or an argument or the input is not valid.
    case usage = 2
    /// The item (or the vault, for `init`; the group, for `group create`) already exists.
    case duplicate = 3
    /// Access denied: a missing entitlement, file permissions, an unsafe file mode or owner, or a wrong
    /// passphrase.
    case accessDenied = 4
    /// The vault is locked: its key needs a passphrase that was not given.
    case locked = 5
    /// A file is damaged or was tampered with.
    case integrity = 6
    /// An input/output error.
    case io = 7
    /// There is no vault at the path.
    case noVault = 8
    /// Not available now: a fleet group's etcd cannot be reached or has no quorum (nothing was changed),
    /// or what the command needs is not there (the crypto library, `vault-fleet`).
    case notAvailable = 9
    /// With `--report-stale`: the answer (printed all the same) came from this machine's cache of a fleet
    /// group, etcd being out of reach or without quorum.
    case stale = 10

    /// The exit status for a vault status.
    package init(_ status: VaultStatus) {
        switch status {
        case .success: self = .success
        case .itemNotFound: self = .notFound
        case .param, .noSuchAttribute, .noSuchClass: self = .usage
        case .duplicateItem, .duplicateVault: self = .duplicate
        case .missingEntitlement, .permissionDenied, .authFailed: self = .accessDenied
        case .interactionNotAllowed: self = .locked
        case .decode: self = .integrity
        case .noSuchVault: self = .noVault
        case .notAvailable: self = .notAvailable
        default: self = .io  // errSecIO, errSecAllocate, errSecUnimplemented
        }
    }
}

extension ExitCode {
    /// The status for item files that failed: integrity when any failed authentication or decoding,
    /// else the first one's (input/output for a file that could only not be read, access denied for
    /// an unsafe one).
    init(problems: [ItemProblem]) {
        if let first = problems.first, !problems.contains(where: { $0.status == .decode }) {
            self.init(first.status)
        } else {
            self = .integrity
        }
    }
}

/// A failure to report: one stderr line `vault: <subject>: <message>` and an exit status.
struct CLIError: Error, Sendable {
    /// The most characters of a subject an error line shows.
    static let maximumSubjectLength = 200

    let code: ExitCode
    let subject: String?
    let message: String
    /// Whether the command already wrote what went wrong (with notes after it): only the status is left.
    let reported: Bool

    init(_ code: ExitCode, _ subject: String?, _ message: String, reported: Bool = false) {
        self.code = code
        self.subject = subject
        self.message = message
        self.reported = reported
    }

    /// A vault failure about `subject` (an item, a group or a path). Vault-wide failures are reported
    /// against the vault path, whatever the subject.
    init(_ error: VaultError, subject: String, vaultPath: String, searched groups: [AccessGroup] = []) {
        let code = ExitCode(error.status)
        switch error.status {
        case .itemNotFound where error.isMissingGroup:
            // The group itself is not there: why (no such group here, a fleet group removed from the fleet).
            self.init(code, subject, "not found: " + error.message)
        case .itemNotFound:
            let scope =
                groups.isEmpty
                ? ""
                : " (searched group\(groups.count == 1 ? "" : "s") \(groups.map(\.rawValue).joined(separator: ", ")))"
            self.init(code, subject, "not found" + scope)
        case .duplicateItem:
            self.init(code, subject, "already exists (vault put replaces an item)")
        case .noSuchVault:
            let hint = error.message.contains("vault init") ? "" : "; create one with `vault init`"
            self.init(code, vaultPath, error.message + hint)
        case .duplicateVault, .permissionDenied, .io, .notAvailable, .allocate:
            self.init(code, vaultPath, error.message)
        default:
            self.init(code, subject, error.message)
        }
    }

    /// The one line written to standard error. Subject and message carry names from the command
    /// line and the vault, so they are escaped as fields are (`Output.escape`): a name can neither
    /// break the line nor send control sequences to the terminal.
    /// A path that the message names already ("no vault at PATH") is not said twice, and a subject
    /// (an item's name as given) is cut after `maximumSubjectLength` characters.
    var line: String {
        let prefix =
            subject.flatMap { subject -> String? in
                if subject.contains("/") && message.contains(subject) { return nil }
                guard subject.count > Self.maximumSubjectLength else { return subject + ": " }
                return "\(subject.prefix(Self.maximumSubjectLength))… (\(subject.utf8.count) bytes): "
            } ?? ""
        return "vault: " + Output.escape(prefix + Self.boundingQuotedNames(message)) + "\n"
    }

    /// `text` with each quoted name (`service "…"`) longer than `maximumSubjectLength` characters cut
    /// there, its size in bytes said: a name may be 4,096 bytes, and an error line echoes it.
    static func boundingQuotedNames(_ text: String) -> String {
        let parts = text.split(separator: "\"", omittingEmptySubsequences: false)
        guard parts.count >= 3 else { return text }
        var result = ""
        for (index, part) in parts.enumerated() {
            if index > 0 { result += "\"" }
            // Odd pieces are inside quotes (the text between an opening and a closing mark).
            if index % 2 == 1, index < parts.count - 1, part.count > maximumSubjectLength {
                result += "\(part.prefix(maximumSubjectLength))… (\(part.utf8.count) bytes)"
            } else {
                result += part
            }
        }
        return result
    }
}
