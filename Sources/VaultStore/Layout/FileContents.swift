import VaultCrypto
import VaultSystem

/// The bytes a file of the vault is written with: plain (ciphertext, markers, journals) or secret (a
/// key file), which stays in secure memory until the write.
typealias FileContents = PlainOrSecretBytes

extension PlainOrSecretBytes {
    /// Writes every byte through `file`'s current offset, or at `offset`.
    func write(to file: FileDescriptor, at offset: Int64? = nil) throws(Errno) {
        switch self {
        case .plain(let bytes):
            if let offset { try file.writeAll(bytes, at: offset) } else { try file.writeAll(bytes) }
        case .secret(let bytes):
            try bytes.withSpan { (span) throws(Errno) in
                if let offset { try file.writeAll(span, at: offset) } else { try file.writeAll(span) }
            }
        }
    }
}
