import Vault
import VaultStore

/// A fleet group's settings as its directory keeps them: `fleet.conf`, `name=value` lines (paths and
/// names, never a secret), written by the vault's owner alone.
extension FleetSettings {
    static let fileName = "fleet.conf"
    static let maximumByteCount = 64 * 1024

    /// The file's text.
    func encoded() -> String {
        var lines = endpoints.map { "endpoint=\($0)" }
        for (name, value) in [
            ("ca-file", caFile), ("certificate-file", certificateFile), ("key-file", keyFile), ("user", user),
            ("password-file", passwordFile),
        ] {
            if let value { lines.append("\(name)=\(value)") }
        }
        if sendsCredentialsInTheClear { lines.append("plain-http-credentials=yes") }
        if readDeadlineMilliseconds != Self.defaultReadDeadlineMilliseconds {
            lines.append("read-deadline-ms=\(readDeadlineMilliseconds)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses the file's text; nil when it is not one.
    static func decode(_ text: String) -> FleetSettings? {
        var settings = FleetSettings(endpoints: [])
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let equals = line.firstIndex(of: "=") else { return nil }
            let name = String(line[..<equals])
            let value = String(line[line.index(after: equals)...])
            switch name {
            case "endpoint": settings.endpoints.append(value)
            case "ca-file": settings.caFile = value
            case "certificate-file": settings.certificateFile = value
            case "key-file": settings.keyFile = value
            case "user": settings.user = value
            case "password-file": settings.passwordFile = value
            case "plain-http-credentials" where value == "yes" || value == "no":
                settings.sendsCredentialsInTheClear = value == "yes"
            case "read-deadline-ms":
                guard let milliseconds = Int(value), readDeadlineRange.contains(milliseconds) else { return nil }
                settings.readDeadlineMilliseconds = milliseconds
            default: return nil
            }
        }
        return settings.endpoints.isEmpty ? nil : settings
    }

    /// The settings of the fleet group whose directory `cache` is. A fleet group without them is
    /// refused: served as a local group, its writes would stay on this machine and its reads go
    /// unchecked (a member can remove the file).
    static func read(from cache: ReplicaCache) throws(StoreError) -> FleetSettings {
        let path = cache.groupPath + "/" + fileName
        guard
            let bytes = try cache.readOwnersFile(fileName, limit: maximumByteCount, what: "the fleet group's settings")
        else {
            throw StoreError(
                .integrity,
                "\(path) is missing, but group \(cache.group) is a fleet group (its group.key says so): its items "
                    + "live in etcd, and nothing is read or written until the owner puts the settings back "
                    + "(`vault group rm \(cache.group) --force`, then `vault group join`, makes them anew)",
                path: path)
        }
        guard let settings = decode(String(decoding: bytes, as: UTF8.self)) else {
            throw StoreError(.integrity, "\(path) is not a fleet group's settings file", path: path)
        }
        return settings
    }
}
