internal import CSodium

/// Raw secure memory (`sodium_malloc`) for code that must hand a plain pointer across a C boundary and
/// free it later by that pointer alone, as the C API's `vault_get_secret`/`vault_free_secret` do. Swift
/// code should use `SecureBytes` instead, which cannot leak or double-free.
///
/// The memory is between guard pages, locked against swap (`mlock`), excluded from core dumps, and
/// wiped when freed.
package enum SecureAllocation {
    /// Allocates `byteCount` zeroed bytes of secure memory (at least one byte is reserved, so that the
    /// pointer of an empty allocation is still a valid, freeable pointer). Throws `CryptoError` when
    /// `byteCount` is negative, libsodium cannot be initialised, or the allocation fails.
    package static func allocate(byteCount: Int) throws(CryptoError) -> UnsafeMutableRawPointer {
        guard byteCount >= 0 else {
            throw CryptoError(.invalidArgument, "a secure allocation cannot have \(byteCount) bytes")
        }
        try Sodium.ensureInitialized()
        let reserved = max(byteCount, 1)
        guard let memory = sodium_malloc(reserved) else {
            throw CryptoError(
                .allocationFailed,
                "cannot allocate \(byteCount) bytes of secure memory (out of memory or locked-memory limit)")
        }
        // sodium_malloc fills new memory with a canary pattern, not zeros.
        sodium_memzero(memory, reserved)
        return memory
    }

    /// Wipes, unlocks and frees memory that `allocate(byteCount:)` returned. Any other pointer, or one
    /// already freed, is undefined behaviour (libsodium may abort): callers that accept pointers from
    /// outside must track their live allocations.
    package static func free(_ pointer: UnsafeMutableRawPointer) {
        sodium_free(pointer)
    }
}
