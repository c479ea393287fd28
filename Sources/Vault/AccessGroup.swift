import VaultStore

/// A validated access-group name (`[A-Za-z0-9._-]`, 1 to 200 bytes, not starting with '.'), such as
/// "TEAMID.com.example.shared". Each group is a directory of the vault.
public struct AccessGroup: Hashable, Sendable, Comparable, CustomStringConvertible, Codable {
    let name: GroupName

    /// Validates `rawValue`; an invalid name is a `param` error that names it.
    public init(_ rawValue: String) throws(VaultError) {
        do {
            name = try GroupName(rawValue)
        } catch {
            throw VaultError(.param, error.message, cause: error)
        }
    }

    init(_ name: GroupName) { self.name = name }

    /// The name.
    public var rawValue: String { name.rawValue }
    /// The name.
    public var description: String { name.rawValue }

    /// Orders by name.
    public static func < (lhs: AccessGroup, rhs: AccessGroup) -> Bool { lhs.name < rhs.name }

    /// Decodes and validates a name.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try AccessGroup(text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    /// Encodes the name.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// Who is asking: an application identifier and the ordered access groups it is entitled to, as an
/// Apple entitlements file gives them (`application-identifier`, `keychain-access-groups`).
///
/// As on Apple platforms, the application identifier is itself an access group, after the listed
/// ones. The first group is the default: adds without a group go there. A query without a group
/// searches every group of the client; items in other groups do not exist for it.
public struct Client: Sendable, Hashable, CustomStringConvertible {
    /// The application identifier, e.g. "TEAMID.com.example.app"; nil for a client that has none.
    public let applicationIdentifier: String?
    /// The groups the client may use, in order: the listed ones, then the application identifier.
    public let accessGroups: [AccessGroup]

    /// Makes a client; every group name (and the application identifier, which is a group too) is
    /// validated.
    public init(applicationIdentifier: String?, accessGroups: [String] = []) throws(VaultError) {
        var groups: [AccessGroup] = []
        for name in accessGroups {
            let group = try AccessGroup(name)
            if !groups.contains(group) { groups.append(group) }
        }
        if let applicationIdentifier, !applicationIdentifier.isEmpty {
            let group = try AccessGroup(applicationIdentifier)
            if !groups.contains(group) { groups.append(group) }
        }
        self.applicationIdentifier = applicationIdentifier
        self.accessGroups = groups
    }

    /// The group that receives adds without a group: the first one.
    public var defaultGroup: AccessGroup? { accessGroups.first }

    /// The identifier, for messages.
    public var description: String { applicationIdentifier ?? "(no application identifier)" }

    /// Checks that the client may use `group`; the error names the group and the client.
    func entitle(_ group: AccessGroup) throws(VaultError) {
        guard accessGroups.contains(group) else {
            throw VaultError(
                .missingEntitlement,
                "client \(description) is not entitled to access group \(group) "
                    + "(its groups: \(accessGroups.map(\.rawValue).joined(separator: ", ")))")
        }
    }

    /// The groups a query or add reaches: the named one (checked), or all the client's groups.
    func groups(for requested: AccessGroup?) throws(VaultError) -> [AccessGroup] {
        guard !accessGroups.isEmpty else {
            throw VaultError(
                .missingEntitlement,
                "client \(description) has no access groups: give it an application identifier or keychain-access-groups"
            )
        }
        if let requested {
            try entitle(requested)
            return [requested]
        }
        return accessGroups
    }

    /// The group an add goes to.
    func targetGroup(for requested: AccessGroup?) throws(VaultError) -> AccessGroup {
        try groups(for: requested).first!
    }
}
