import Vault
import VaultDBus

/// An error a client gets: a D-Bus error name (the Secret Service's own where the specification has
/// one) and a message naming the object.
struct ServiceError: Error {
    enum Name: String {
        case isLocked = "org.freedesktop.Secret.Error.IsLocked"
        case noSession = "org.freedesktop.Secret.Error.NoSession"
        case noSuchObject = "org.freedesktop.Secret.Error.NoSuchObject"
        case notSupported = "org.freedesktop.DBus.Error.NotSupported"
        case invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        case unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        case unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        case propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        case accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        case failed = "org.freedesktop.DBus.Error.Failed"
    }

    let name: Name
    let message: String

    init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// A vault error as the client's: a locked class is `IsLocked`, a missing item `NoSuchObject`.
    init(_ error: VaultError, _ what: String) {
        switch error.status {
        case .interactionNotAllowed:
            self.init(.isLocked, "\(what): the vault is locked; run `vault unlock` (\(error.message))")
        case .itemNotFound: self.init(.noSuchObject, "\(what): \(error.message)")
        case .param: self.init(.invalidArgs, "\(what): \(error.message)")
        default: self.init(.failed, "\(what): \(error.message)")
        }
    }
}
