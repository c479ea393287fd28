/// A short-lived plaintext in ordinary memory (no `mlock`, no guard pages: those cost nine system
/// calls, more than a whole item read), owned by this one object and wiped with `sodium_memzero` when
/// it goes. Read it only through `withBytes`, so that no copy of the array outlives the object.
@usableFromInline package final class TransientBytes {
    @usableFromInline var bytes: [UInt8]

    init(_ bytes: consuming [UInt8]) {
        self.bytes = bytes
    }

    /// `count` bytes that `fill` writes. The buffer is this object's from the start, so it is wiped
    /// whether or not `fill` succeeds.
    init<Failure: Error>(count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(Failure) -> Void) throws(Failure) {
        // An empty array may have no storage to hand out; fill a byte and drop it.
        bytes = [UInt8](repeating: 0, count: max(count, 1))
        try bytes.withTypedMutableBytes { (raw) throws(Failure) in
            try fill(UnsafeMutableRawBufferPointer(rebasing: raw[0..<count]))
        }
        if count == 0 { bytes = [] }
    }

    deinit {
        // The array's buffer is referenced only from here (no copy escaped `withBytes`), so this wipes
        // the one buffer that held the plaintext.
        bytes.wipe()
    }

    /// The number of bytes.
    package var count: Int { bytes.count }

    /// Drops the padding that `Padding.padded` appended (zeros after a final 0x80); false, and
    /// nothing dropped, when the bytes do not end that way. The dropped bytes are not secret; the
    /// array keeps its buffer, so the wipe at the end still covers every byte that was the plaintext.
    package func removePadding() -> Bool {
        guard let end = Padding.unpaddedCount(bytes) else { return false }
        bytes.removeLast(bytes.count - end)
        return true
    }

    /// Gives `body` the bytes; do not keep them.
    @inlinable
    package func withBytes<R, E: Error>(_ body: ([UInt8]) throws(E) -> R) throws(E) -> R {
        try body(bytes)
    }
}

extension TransientBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Redacted: the byte count only.
    @usableFromInline package var description: String { "TransientBytes(\(count) bytes, redacted)" }
    /// Redacted: the byte count only.
    @usableFromInline package var debugDescription: String { description }
    /// An empty mirror, so that `dump` and debuggers' summaries show no bytes.
    @usableFromInline package var customMirror: Mirror { Mirror(self, children: [:]) }
}
