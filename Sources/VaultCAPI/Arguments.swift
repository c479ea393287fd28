internal import CVaultAPI
import FoundationEssentials
internal import Glibc
import Vault

/// Checked reading of C arguments: every NULL, length and string is validated before use, and every
/// problem is a `Failure` with `VAULT_ERR_PARAM` that names the parameter.
enum Arguments {
    /// A required NUL-terminated UTF-8 string.
    static func string(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(Failure) -> String {
        guard let pointer else { throw Failure.param("\(name) is NULL") }
        return try decode(pointer, name)
    }

    /// An optional string: NULL is nil.
    static func optionalString(_ pointer: UnsafePointer<CChar>?, _ name: String) throws(Failure) -> String? {
        guard let pointer else { return nil }
        return try decode(pointer, name)
    }

    private static func decode(_ pointer: UnsafePointer<CChar>, _ name: String) throws(Failure) -> String {
        guard let text = String(validatingCString: pointer) else {
            throw Failure.param("\(name) is not valid UTF-8")
        }
        return text
    }

    /// An optional access group: NULL is nil (the client's groups).
    static func group(_ pointer: UnsafePointer<CChar>?) throws(Failure) -> AccessGroup? {
        guard let name = try optionalString(pointer, "group") else { return nil }
        do {
            return try AccessGroup(name)
        } catch {
            throw Failure(error)
        }
    }

    /// The key of the item functions: group (may be NULL), service (required), account (NULL is "").
    static func itemKey(
        group: UnsafePointer<CChar>?, service: UnsafePointer<CChar>?, account: UnsafePointer<CChar>?
    ) throws(Failure) -> ItemKey {
        let group = try self.group(group)
        let service = try string(service, "service")
        let account = try optionalString(account, "account") ?? ""
        do {
            return try ItemKey(service: service, account: account, group: group)
        } catch {
            throw Failure(error)
        }
    }

    /// A secret from C, copied: `pointer` may be NULL only when `length` is 0; at most
    /// `VAULT_MAX_SECRET_LENGTH` bytes, checked before any byte is read.
    static func secret(_ pointer: UnsafePointer<UInt8>?, _ length: UInt64) throws(Failure) -> Data {
        guard length <= UInt64(VAULT_MAX_SECRET_LENGTH) else {
            throw Failure.param("secret_len is \(length) bytes; at most \(VAULT_MAX_SECRET_LENGTH) are allowed")
        }
        let count = Int(length)
        guard count > 0 else { return Data() }
        guard let pointer else { throw Failure.param("secret is NULL but secret_len is \(length)") }
        return Data(bytes: pointer, count: count)
    }

    /// A required output pointer.
    static func output<T>(_ pointer: UnsafeMutablePointer<T>?, _ name: String) throws(Failure)
        -> UnsafeMutablePointer<T>
    {
        guard let pointer else { throw Failure.param("\(name) is NULL") }
        return pointer
    }
}
