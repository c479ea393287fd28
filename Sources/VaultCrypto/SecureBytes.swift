internal import CSodium

/// Secret bytes (keys, decrypted item bodies) in memory from `sodium_malloc`: guarded by inaccessible
/// pages, locked against swap (`mlock`), excluded from core dumps (`MADV_DONTDUMP`), read-only once
/// filled, and wiped when the last reference goes. The bytes are reachable only inside a closure; the
/// description is redacted; equality is constant-time.
///
/// Keys made together (`split(into:)`, `KeyDerivation.subkeys`) share one allocation: each is a view
/// of its part, and the allocation, with every key in it, is wiped and freed when the last of them
/// goes: dropping one of them wipes nothing, and the guard pages fence the allocation, not each key
/// from its neighbours. So only keys that live as long as each other are made together. Each
/// allocation costs a dozen system calls (mmap, mprotect of two guard pages, madvise, mlock, and their
/// undoing), more than a whole read of an item: so buffers of up to `SecureSlab.largestPart` bytes are
/// parts of a shared page (`SecureSlab`), wiped one by one when they go.
public final class SecureBytes: @unchecked Sendable {
    // @unchecked: the memory is written only inside `init` and is read-only (mprotect) afterwards, so
    // sharing the reference between threads shares immutable bytes.
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes.
    public let count: Int
    /// The buffer whose allocation these bytes are part of; nil when this object owns its allocation.
    private let owner: SecureBytes?
    /// The shared page these bytes are a part of (small buffers: `SecureSlab`); nil when they have an
    /// allocation of their own, or are a view.
    private let slab: SecureSlab?

    /// Allocates `count` bytes and lets `initializer` fill them (they start zeroed). Throws
    /// `CryptoError` when libsodium or the allocation fails; if `initializer` throws, the memory is
    /// wiped and freed and its error is passed on.
    package convenience init(count: Int, initializer: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        let (memory, slab) = try Self.allocate(count)
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: memory, count: count))
        } catch {
            Self.discard(memory, slab: slab, count: count)
            throw error
        }
        self.init(filled: memory, count: count, slab: slab)
    }

    /// Allocates `count` bytes and lets `initializer` fill them (they start zeroed), keeping the
    /// initializer's error type: a failure is `.allocation` or the initializer's, as `.filling`; after
    /// either the memory is wiped and freed.
    /// `sharingAPage: false` gives the bytes an allocation of their own whatever their size: for bytes a
    /// client holds (an over-read through its pointer then meets a guard page, not the vault's keys), and
    /// for a fill that takes long (Argon2id), during which a shared page would stay writable.
    package convenience init<Failure: Error>(
        exactly count: Int, sharingAPage: Bool = true,
        initializer: (UnsafeMutableRawBufferPointer) throws(Failure) -> Void
    ) throws(SecureFillError<Failure>) {
        let memory: UnsafeMutableRawPointer
        let slab: SecureSlab?
        do {
            (memory, slab) = try Self.allocate(count, sharingAPage: sharingAPage)
        } catch {
            throw .allocation(error)
        }
        do {
            try initializer(UnsafeMutableRawBufferPointer(start: memory, count: count))
        } catch {
            Self.discard(memory, slab: slab, count: count)
            throw .filling(error)
        }
        self.init(filled: memory, count: count, slab: slab)
    }

    /// Takes over `memory`, filled: read-only from now on. Set only after filling: a throw from a fully
    /// initialised class would run deinit and free the memory a second time.
    private init(filled memory: UnsafeMutableRawPointer, count: Int, slab: SecureSlab?) {
        if let slab {
            SecureSlab.finishedFilling(slab)
        } else {
            _ = sodium_mprotect_readonly(memory)
        }
        self.pointer = memory
        self.count = count
        self.owner = nil
        self.slab = slab
    }

    /// A view of `count` bytes of `owner` from `offset`, keeping it alive.
    private init(viewOf owner: SecureBytes, offset: Int, count: Int) {
        self.pointer = owner.pointer + offset
        self.count = count
        self.owner = owner.owner ?? owner
        self.slab = nil
    }

    /// These bytes as consecutive parts of `size` bytes each (the count must be a multiple of it),
    /// sharing this allocation: for keys filled in one go, which then cost one secure allocation.
    package func split(into size: Int) -> [SecureBytes] {
        precondition(size > 0 && count % size == 0, "a secure buffer splits into parts of equal size")
        return views(ofSizes: Array(repeating: size, count: count / size))
    }

    /// Consecutive parts of these bytes from the first, of `sizes` bytes each, sharing this allocation;
    /// bytes after the last part (a scratch area, wiped by the maker) belong to no part.
    func views(ofSizes sizes: [Int]) -> [SecureBytes] {
        precondition(sizes.allSatisfy { $0 >= 0 } && sizes.reduce(0, +) <= count, "parts outside the secure buffer")
        var offset = 0
        return sizes.map { size in
            defer { offset += size }
            return SecureBytes(viewOf: self, offset: offset, count: size)
        }
    }

    /// `count` zeroed, writable bytes (one byte at least: `sodium_malloc(0)` returns a pointer that must
    /// not be touched): a part of a shared slab when small, else an allocation of their own.
    private static func allocate(_ count: Int, sharingAPage: Bool = true) throws(CryptoError)
        -> (UnsafeMutableRawPointer, SecureSlab?)
    {
        guard count >= 0 else { throw CryptoError(.invalidArgument, "a secure buffer cannot have \(count) bytes") }
        try Sodium.ensureInitialized()
        if sharingAPage, count <= SecureSlab.largestPart {
            let part = try SecureSlab.allocatePart(max(count, 1))
            return (part.pointer, part.slab)
        }
        guard let memory = sodium_malloc(max(count, 1)) else {
            throw CryptoError(
                .allocationFailed,
                "cannot allocate \(count) bytes of secure memory (out of memory or address space)"
            )
        }
        Wiping.wipe(UnsafeMutableRawBufferPointer(start: memory, count: max(count, 1)))
        return (memory, nil)
    }

    /// Wipes and gives back memory that `allocate` gave and whose filling failed.
    private static func discard(_ memory: UnsafeMutableRawPointer, slab: SecureSlab?, count: Int) {
        if let slab {
            SecureSlab.release(slab, memory, count: max(count, 1), filling: true)
        } else {
            sodium_free(memory)
        }
    }

    /// Allocates `count` bytes and lets `fill` write them through a span (they start zeroed), keeping its
    /// error type: for a reader that fills a key from a file or the kernel keyring.
    package convenience init<Failure: Error>(count: Int, filling fill: (inout MutableRawSpan) throws(Failure) -> Void)
        throws(SecureFillError<Failure>)
    {
        try self.init(exactly: count) { (buffer) throws(Failure) in
            var span = MutableRawSpan(_unsafeBytes: buffer)
            try fill(&span)
        }
    }

    /// Gives `body` the bytes as a span. Do not let it escape.
    public func withSpan<R, E: Error>(_ body: (RawSpan) throws(E) -> R) throws(E) -> R {
        try withUnsafeBytes { (raw) throws(E) in try body(RawSpan(_unsafeBytes: raw)) }
    }

    /// Copies `bytes` into secure memory. The caller remains responsible for wiping its own copy.
    package convenience init(copying bytes: UnsafeRawBufferPointer) throws(CryptoError) {
        do {
            try self.init(exactly: bytes.count) { (buffer) throws(Never) in buffer.copyMemory(from: bytes) }
        } catch {
            throw error.allocationError
        }
    }

    /// Copies `bytes` into secure memory (`sharingAPage` as for `init(exactly:sharingAPage:initializer:)`).
    /// The caller remains responsible for wiping its own copy.
    package convenience init(copying bytes: [UInt8], sharingAPage: Bool = true) throws(CryptoError) {
        do {
            try self.init(exactly: bytes.count, sharingAPage: sharingAPage) { (buffer) throws(Never) in
                bytes.withUnsafeBytes { buffer.copyMemory(from: $0) }
            }
        } catch {
            throw error.allocationError
        }
    }

    /// Copies the bytes of `bytes` in `range` into secure memory (no copy of them on the way). The
    /// caller remains responsible for wiping its own copy.
    package convenience init(copying bytes: [UInt8], range: Range<Int>) throws(CryptoError) {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "range outside the bytes")
        do {
            try self.init(exactly: range.count) { (buffer) throws(Never) in
                bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[range])) }
            }
        } catch {
            throw error.allocationError
        }
    }

    /// Copies `bytes` into secure memory and wipes the array's storage; `sharingAPage` as for
    /// `init(exactly:sharingAPage:initializer:)`.
    package convenience init(consuming bytes: inout [UInt8], sharingAPage: Bool = true) throws(CryptoError) {
        defer {
            bytes.wipe()
            bytes = []
        }
        try self.init(copying: bytes, sharingAPage: sharingAPage)
    }

    /// The bytes in `range`, copied into secure memory of their own (a key after a header).
    package func copying(_ range: Range<Int>) throws(CryptoError) -> SecureBytes {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range outside the bytes")
        return try withUnsafeBytes { (bytes) throws(CryptoError) in
            try SecureBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
    }

    /// The first `length` bytes as an ordinary array: only for what is not secret (a header).
    package func unprotectedPrefix(_ length: Int) -> [UInt8] {
        withUnsafeBytes { Array($0.prefix(length)) }
    }

    /// A copy of these bytes in an allocation of their own: for bytes handed to a client.
    package func copiedApart() throws(CryptoError) -> SecureBytes {
        do {
            return try SecureBytes(exactly: count, sharingAPage: false) { (buffer) throws(Never) in
                if count > 0 { buffer.baseAddress!.copyMemory(from: pointer, byteCount: count) }
            }
        } catch {
            throw error.allocationError
        }
    }

    /// These bytes followed by `tail` (not secret), in a new secure buffer.
    package func appending(_ tail: [UInt8]) throws(CryptoError) -> SecureBytes {
        do {
            return try SecureBytes(exactly: count + tail.count) { (buffer) throws(Never) in
                buffer.baseAddress!.copyMemory(from: pointer, byteCount: count)
                tail.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[count...]).copyMemory(from: $0) }
            }
        } catch {
            throw error.allocationError
        }
    }

    /// The bytes of `parts`, one after the other, in a new secure buffer.
    package static func joined(_ parts: [SecureBytes]) throws(CryptoError) -> SecureBytes {
        let total = parts.reduce(0) { $0 + $1.count }
        do {
            return try SecureBytes(exactly: total) { (buffer) throws(Never) in
                var offset = 0
                for part in parts {
                    if part.count > 0 {
                        (buffer.baseAddress! + offset).copyMemory(from: part.pointer, byteCount: part.count)
                    }
                    offset += part.count
                }
            }
        } catch {
            throw error.allocationError
        }
    }

    /// `count` random bytes from the system's CSPRNG (`randombytes_buf`, getrandom(2) on Linux, so a
    /// forked child never repeats its parent's stream).
    package static func random(count: Int) throws(CryptoError) -> SecureBytes {
        do {
            return try SecureBytes(exactly: count) { (buffer) throws(Never) in
                if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
            }
        } catch {
            throw error.allocationError
        }
    }

    deinit {
        // sodium_free makes the pages writable, checks the canary, wipes, unlocks and unmaps; a slab
        // wipes the part. A view's owner does that when the last view of it goes.
        guard owner == nil else { return }
        if let slab {
            SecureSlab.release(slab, pointer, count: max(count, 1), filling: false)
        } else {
            sodium_free(pointer)
        }
    }

    /// Gives `body` read access to the bytes. Do not let the pointer escape.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Gives `body` a copy of the bytes in an ordinary array, wiped when `body` returns: for decoders
    /// that take arrays. `body` must not keep the array.
    package func withTransientCopy<R, E: Error>(_ body: ([UInt8]) throws(E) -> R) throws(E) -> R {
        var copy = unprotectedCopy()
        defer { copy.wipe() }
        return try body(copy)
    }

    /// A copy of the bytes in ordinary memory, not wiped by anyone: only for bytes that are not secret
    /// although they came in secure memory (a wrapped key's envelope, check values).
    package func unprotectedCopy() -> [UInt8] {
        withUnsafeBytes { Array($0) }
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

/// Why a secure buffer filled by a closure could not be made: no memory, or the closure failed.
package enum SecureFillError<Failure: Error>: Error {
    /// The secure memory could not be allocated.
    case allocation(CryptoError)
    /// The initializer threw.
    case filling(Failure)
}

extension SecureFillError where Failure == Never {
    /// The allocation failure, the only one an initializer that cannot fail leaves.
    package var allocationError: CryptoError {
        switch self {
        case .allocation(let error): return error
        case .filling(let never): switch never {}
        }
    }
}

extension SecureFillError where Failure == CryptoError {
    /// The failure, whichever step it came from.
    package var cryptoError: CryptoError {
        switch self {
        case .allocation(let error), .filling(let error): return error
        }
    }
}
