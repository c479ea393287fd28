import FoundationEssentials

/// A persistent device or instance identifier, the keychain's most common use: a UUID created on first
/// use and kept in the vault, so that it survives the service being removed and reinstalled.
extension Vault {
    /// The service under which identifiers are stored (one generic password per key, the key being the
    /// account, the UUID's text the secret).
    public static let deviceIdentifierService = "vault.device-identifier"
    /// The key of the vault's own identifier.
    public static let defaultDeviceIdentifierKey = "vault"

    /// The UUID stored under `key`, and whether this call created it. Creation is atomic under the
    /// vault's lock: N processes racing on an empty vault all get one UUID, and exactly one of them is
    /// told it created it. The item is `afterFirstUnlockThisDeviceOnly`: it never leaves the device.
    public func deviceIdentifier(for key: String = Vault.defaultDeviceIdentifierKey) throws(VaultError) -> (
        identifier: UUID, created: Bool
    ) {
        let itemKey = try ItemKey(service: Self.deviceIdentifierService, account: key)
        // The common case, an existing identifier, takes no lock.
        if let data = try data(for: itemKey) { return (try parse(data, key: key), false) }
        var created = false
        let stored = try modify(itemKey, accessibility: .afterFirstUnlockThisDeviceOnly) { current in
            if let current { return current }
            created = true
            return Data(UUID().uuidString.utf8)
        }
        return (try parse(stored ?? Data(), key: key), created)
    }

    private func parse(_ data: Data, key: String) throws(VaultError) -> UUID {
        guard let text = String(validating: data, as: UTF8.self), let uuid = UUID(uuidString: text) else {
            throw VaultError(.decode, "the device identifier \"\(key)\" in \(path) is not a UUID")
        }
        return uuid
    }
}
