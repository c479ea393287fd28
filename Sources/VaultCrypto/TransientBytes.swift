internal import CSodium

/// A short-lived plaintext in ordinary memory (no `mlock`, no guard pages: those cost nine system
/// calls, more than a whole item read), owned by this one object and wiped with `sodium_memzero` when
/// it goes. Read it only through `withBytes`, so that no copy of the array outlives the object.
public final class TransientBytes {
    private var bytes: [UInt8]

    init(_ bytes: consuming [UInt8]) {
        self.bytes = bytes
    }

    deinit {
        // The array's buffer is referenced only from here (no copy escaped `withBytes`), so this wipes
        // the one buffer that held the plaintext.
        bytes.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
        }
    }

    /// The number of bytes.
    public var count: Int { bytes.count }

    /// Gives `body` the bytes; do not keep them.
    public func withBytes<R, E: Error>(_ body: ([UInt8]) throws(E) -> R) throws(E) -> R {
        try body(bytes)
    }
}

extension TransientBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Redacted: the byte count only.
    public var description: String { "TransientBytes(\(count) bytes, redacted)" }
    /// Redacted: the byte count only.
    public var debugDescription: String { description }
    /// An empty mirror, so that `dump` and debuggers' summaries show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
