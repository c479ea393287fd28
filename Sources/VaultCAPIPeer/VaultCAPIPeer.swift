import FoundationEssentials
internal import Glibc
import Vault

/// The Swift side of the C API's cross-language test (scripts/test-c-api): reads and writes one vault
/// through the Swift API while the C test program and the CLI use the same directory.
///
///     vault-capi-peer put DIR APP SERVICE ACCOUNT    store standard input under (SERVICE, ACCOUNT)
///     vault-capi-peer get DIR APP SERVICE ACCOUNT    write the secret to standard output
///
/// Exits 0 on success, 1 with a message on standard error otherwise (44 for "not found").
@main
struct VaultCAPIPeer {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard arguments.count == 5, ["put", "get"].contains(arguments[0]) else {
            fail("usage: vault-capi-peer put|get DIR APP SERVICE ACCOUNT", code: 2)
        }
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
