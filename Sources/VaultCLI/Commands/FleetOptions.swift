import Vault
import VaultSystem

/// The etcd options of `group create --etcd` and `group join`: where the cluster is and how to reach
/// it (file paths only; a password is read from its file by the etcd client, never from argv).
enum FleetOptions {
    static let specs: [OptionSpec] = [
        .value("etcd", "URL[,URL…]", "a fleet group: its items live in the etcd cluster at these client URLs"),
        .value("etcd-ca", "FILE", "verify the etcd members' certificates with this CA file"),
        .value("etcd-cert", "FILE", "present this client certificate to etcd (with --etcd-key)"),
        .value("etcd-key", "FILE", "the private key of --etcd-cert"),
        .value("etcd-user", "NAME", "authenticate to etcd as this user (with --etcd-password-file)"),
        .value("etcd-password-file", "FILE", "the etcd user's password: the first line of FILE"),
        .flag("etcd-plain-http-credentials", "let the password go over http:// off this machine (a lab only)"),
        .value("etcd-read-deadline", "MS", "answer reads from the cache when etcd has not within MS ms (default 1000)"),
    ]

    /// The settings the options give, or nil without --etcd; `command` names the command in errors.
    static func settings(_ parsed: ParsedArguments, command: String) throws(UsageError) -> FleetSettings? {
        guard let urls = parsed.value("etcd") else {
            for name in ["etcd-ca", "etcd-cert", "etcd-key", "etcd-user", "etcd-password-file", "etcd-read-deadline"]
            where parsed.value(name) != nil {
                throw UsageError("--\(name) goes with --etcd URL[,URL…]", command: command)
            }
            if parsed.flag("etcd-plain-http-credentials") {
                throw UsageError("--etcd-plain-http-credentials goes with --etcd URL[,URL…]", command: command)
            }
            return nil
        }
        let endpoints = urls.split(separator: ",").map(String.init)
        guard !endpoints.isEmpty, endpoints.allSatisfy({ $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            throw UsageError(
                "--etcd takes http://HOST:PORT or https://HOST:PORT URLs, separated by commas", command: command)
        }
        var settings = FleetSettings(endpoints: endpoints)
        settings.caFile = parsed.value("etcd-ca")
        settings.certificateFile = parsed.value("etcd-cert")
        settings.keyFile = parsed.value("etcd-key")
        settings.user = parsed.value("etcd-user")
        settings.passwordFile = parsed.value("etcd-password-file")
        if (settings.certificateFile == nil) != (settings.keyFile == nil) {
            throw UsageError("--etcd-cert and --etcd-key go together", command: command)
        }
        if (settings.user == nil) != (settings.passwordFile == nil) {
            throw UsageError("--etcd-user and --etcd-password-file go together", command: command)
        }
        settings.sendsCredentialsInTheClear = parsed.flag("etcd-plain-http-credentials")
        if let text = parsed.value("etcd-read-deadline") {
            guard let milliseconds = Int(text), FleetSettings.readDeadlineRange.contains(milliseconds) else {
                throw UsageError(
                    "--etcd-read-deadline is a number of milliseconds from \(FleetSettings.readDeadlineRange.lowerBound) "
                        + "to \(FleetSettings.readDeadlineRange.upperBound), not \"\(text)\"", command: command)
            }
            settings.readDeadlineMilliseconds = milliseconds
        }
        if let refusal = settings.credentialsRefusal { throw UsageError(refusal, command: command) }
        return settings
    }
}
