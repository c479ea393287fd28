/// Bytes that are either not secret, in an ordinary array, or secret, in secure memory: the parts of a
/// message that mixes both, the contents of a file that may hold a key.
package enum PlainOrSecretBytes: Sendable {
    /// Bytes that need no secure memory.
    case plain([UInt8])
    /// Secret bytes.
    case secret(SecureBytes)

    /// The number of bytes.
    package var count: Int {
        switch self {
        case .plain(let bytes): return bytes.count
        case .secret(let bytes): return bytes.count
        }
    }
}
