import CVaultAPI
import FoundationEssentials
internal import Glibc
import Vault

/// The Swift side of the C API's cross-language test (scripts/test-c-api): reads and writes one vault
/// through the Swift API while the C test program and the CLI use the same directory; and a process
/// that uses a vault through the C API itself (include/vault.h), as a C service would.
///
///     vault-capi-peer put DIR APP SERVICE ACCOUNT            store standard input under (SERVICE, ACCOUNT)
///     vault-capi-peer get DIR APP SERVICE ACCOUNT            write the secret to standard output
///     vault-capi-peer c-put DIR APP GROUP SERVICE ACCOUNT    the same through vault_open (client APP with
///     vault-capi-peer c-get DIR APP GROUP SERVICE ACCOUNT    the access group GROUP), vault_put and
///                                                            vault_get_secret in GROUP
///
/// Exits 0 on success, 1 with a message on standard error otherwise (44 for "not found"); a C API
/// failure is written as "vault-capi-peer: FUNCTION: status N (NAME): MESSAGE", with the library's
/// `vault_last_error_message()`.
@main
struct VaultCAPIPeer {
    static let usage =
        "usage: vault-capi-peer put|get DIR APP SERVICE ACCOUNT | c-put|c-get DIR APP GROUP SERVICE ACCOUNT"

    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.count == 6, ["c-put", "c-get"].contains(arguments[0]) {
            let request = CRequest(
                path: arguments[1], applicationIdentifier: arguments[2], group: arguments[3], service: arguments[4],
                account: arguments[5])
            request.run(put: arguments[0] == "c-put")
            return
        }
        guard arguments.count == 5, ["put", "get"].contains(arguments[0]) else { fail(usage, code: 2) }
        do {
            let client = try Client(applicationIdentifier: arguments[2])
            let vault = try Vault.open(at: arguments[1], client: client, createIfMissing: true)
            let key = try ItemKey(service: arguments[3], account: arguments[4])
            if arguments[0] == "put" {
                try vault.set(readStandardInput(), for: key)
            } else {
                guard let data = try vault.data(for: key) else { fail("vault-capi-peer: no item \(key)", code: 44) }
                writeAll(1, Array(data))
            }
        } catch {
            fail("vault-capi-peer: \(error.message) [\(error.status)]", code: 1)
        }
    }

    static func readStandardInput() -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if count > 0 {
                data.append(contentsOf: buffer[0..<count])
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }

    static func fail(_ message: String, code: Int32) -> Never {
        writeAll(2, Array((message + "\n").utf8))
        exit(code)
    }
}

/// One put or get of a generic password in a named access group, through the C API.
struct CRequest {
    let path: String
    let applicationIdentifier: String
    let group: String
    let service: String
    let account: String

    func run(put: Bool) {
        var handle: OpaquePointer?
        check(
            "vault_open",
            applicationIdentifier.withCString { app in
                group.withCString { group in
                    var groups: [UnsafePointer<CChar>?] = [group]
                    return vault_open(path, app, &groups, 1, UInt32(VAULT_OPEN_CREATE), &handle)
                }
            })
        defer { _ = vault_close(handle) }
        if put {
            let secret = VaultCAPIPeer.readStandardInput()
            check(
                "vault_put",
                secret.withUnsafeBytes { bytes in
                    vault_put(
                        handle, group, service, account, bytes.bindMemory(to: UInt8.self).baseAddress,
                        UInt64(bytes.count))
                })
            return
        }
        var secret: UnsafeMutablePointer<UInt8>?
        var length: UInt64 = 0
        check("vault_get_secret", vault_get_secret(handle, group, service, account, &secret, &length))
        defer { _ = vault_free_secret(secret) }
        if let secret { VaultCAPIPeer.writeAll(1, Array(UnsafeBufferPointer(start: secret, count: Int(length)))) }
    }

    /// Exits (44 for VAULT_ERR_NOT_FOUND, else 1) when `status` is not VAULT_OK, naming `function`, the
    /// status and the library's message.
    func check(_ function: String, _ status: Int32) {
        guard status != VAULT_OK else { return }
        let message = String(cString: vault_last_error_message())
        let name = String(cString: vault_strerror(status))
        VaultCAPIPeer.fail(
            "vault-capi-peer: \(function): status \(status) (\(name)): \(message)",
            code: status == VAULT_ERR_NOT_FOUND ? 44 : 1)
    }
}
