internal import CSodium

/// Secret bytes (keys, decrypted item bodies) in memory from `sodium_malloc`: guarded by inaccessible
/// pages, locked against swap (`mlock`), excluded from core dumps (`MADV_DONTDUMP`), read-only once
/// filled, and wiped when the last reference goes. The bytes are reachable only inside a closure; the
/// description is redacted; equality is constant-time.
public final class SecureBytes: @unchecked Sendable {
    // @unchecked: the memory is written only inside `init` and is read-only (mprotect) afterwards, so
    // sharing the reference between threads shares immutable bytes.
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int

    /// Allocates `count` bytes and lets `initializer` fill them (they start zeroed). Throws
    /// `CryptoError` when libsodium or the allocation fails; if `initializer` throws, the memory is
    /// wiped and freed and its error is passed on.
    public init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        guard count >= 0 else { throw CryptoError(.invalidArgument, "a secure buffer cannot have \(count) bytes") }
        try Sodium.ensureInitialized()
        // sodium_malloc(0) is valid but returns a pointer we must not touch; keep one byte instead.
        guard let memory = sodium_malloc(max(count, 1)) else {
            throw CryptoError(
                .allocationFailed,
                "cannot allocate \(count) bytes of secure memory (out of memory or address space)"
            )
        }
        sodium_memzero(memory, max(count, 1))
        // Fill before the stored properties are set: a throw from a fully initialised class would run
        // deinit and free the memory a second time.
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: memory, count: count))
        } catch {
            sodium_free(memory)
            throw error
        }
        _ = sodium_mprotect_readonly(memory)
        self.pointer = memory
        self.count = count
    }

    /// Copies `bytes` into secure memory. The caller remains responsible for wiping its own copy.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws {
        try self.init(count: bytes.count) { buffer in
            if let base = bytes.baseAddress, bytes.count > 0 {
                buffer.baseAddress!.copyMemory(from: base, byteCount: bytes.count)
            }
        }
    }

    /// Copies `bytes` into secure memory and wipes the array's storage.
    public convenience init(consuming bytes: inout [UInt8]) throws {
        defer {
            bytes.withUnsafeMutableBytes { raw in
                if let base = raw.baseAddress { sodium_memzero(base, raw.count) }
            }
            bytes = []
        }
        try self.init(count: bytes.count) { buffer in
            bytes.withUnsafeBytes { source in
                if let base = source.baseAddress, source.count > 0 {
                    buffer.baseAddress!.copyMemory(from: base, byteCount: source.count)
                }
            }
        }
    }

    /// `count` random bytes from the system's CSPRNG (`randombytes_buf`, getrandom(2) on Linux, so a
    /// forked child never repeats its parent's stream).
    public static func random(count: Int) throws -> SecureBytes {
        try SecureBytes(count: count) { buffer in
            if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
        }
    }

    deinit {
        // sodium_free makes the pages writable, checks the canary, wipes, unlocks and unmaps.
        sodium_free(pointer)
    }

    /// Gives `body` read access to the bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Constant-time comparison of the contents (`sodium_memcmp`); different lengths are unequal.
    public func constantTimeEquals(_ other: SecureBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return sodium_memcmp(pointer, other.pointer, count) == 0
    }

    /// Constant-time comparison with plain bytes.
    public func constantTimeEquals(_ bytes: [UInt8]) -> Bool {
        withUnsafeBytes { ConstantTime.equals($0, bytes) }
    }
}

extension SecureBytes: Equatable {
    /// Constant-time equality of the contents.
    public static func == (lhs: SecureBytes, rhs: SecureBytes) -> Bool {
        lhs.constantTimeEquals(rhs)
    }
}

extension SecureBytes: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Redacted: the byte count only.
    public var description: String { "SecureBytes(\(count) bytes, redacted)" }
    /// Redacted: the byte count only.
    public var debugDescription: String { description }
    /// An empty mirror, so that `dump` and debuggers' summaries show no bytes.
    public var customMirror: Mirror { Mirror(self, children: [:]) }
}
