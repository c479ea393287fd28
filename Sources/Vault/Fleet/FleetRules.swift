import VaultStore

extension Accessibility {
    /// Whether items of this accessibility must stay on this machine (`…ThisDeviceOnly`).
    public var isThisDeviceOnly: Bool {
        switch self {
        case .whenUnlockedThisDeviceOnly, .afterFirstUnlockThisDeviceOnly, .alwaysThisDeviceOnly,
            .whenPasscodeSetThisDeviceOnly:
            return true
        default:
            return false
        }
    }
}

extension ItemEngine {
    /// Refuses (`param`) a `…ThisDeviceOnly` item in a fleet group, whose items every machine that
    /// joined it reads.
    func requireAllowedInGroup(_ record: ItemRecord, _ group: AccessGroup) throws(VaultError) {
        guard let accessible = record.attributes.accessible, accessible.isThisDeviceOnly,
            store.isFleetGroup(group.name)
        else { return }
        throw VaultError(
            .param,
            "group \(group) is a fleet group, whose items every machine that joined it reads: an item with "
                + "accessibility \(accessible) must stay on this machine; put it in another group")
    }
}
