/// The name of a generic password in the convenience API: a service and an account (both "" when
/// missing, as Apple's primary key has it), optionally in one access group.
public struct ItemKey: Hashable, Sendable, CustomStringConvertible {
    /// kSecAttrService.
    public var service: String
    /// kSecAttrAccount.
    public var account: String
    /// The group to use; nil means the client's groups (adds go to its default group).
    public var group: AccessGroup?

    /// A key. Service and account are any strings of at most 4096 bytes.
    public init(service: String, account: String = "", group: AccessGroup? = nil) throws(VaultError) {
        for (name, value) in [("service", service), ("account", account)] where value.utf8.count > Self.maximumLength {
            throw VaultError(.param, "\(name) is \(value.utf8.count) bytes; at most \(Self.maximumLength) are allowed")
        }
        self.service = service
        self.account = account
        self.group = group
    }

    /// The longest service or account, in UTF-8 bytes.
    public static let maximumLength = 4096

    /// The service and account, for messages.
    public var description: String {
        "service \"\(service)\", account \"\(account)\"" + (group.map { " in group \($0)" } ?? "")
    }

    var query: Query {
        .genericPassword(service: service, account: account, group: group)
    }

    /// The attributes of a new item of this key (`set`, `modify`): service, account, `accessibility`.
    func attributes(accessibility: Accessibility) -> ItemAttributes {
        var attributes = ItemAttributes(service: service, account: account)
        attributes.accessible = accessibility
        return attributes
    }
}
