internal import CSodium
import Synchronization

/// One page of secure memory that small `SecureBytes` share. A `sodium_malloc` costs a dozen system
/// calls and three page faults (guard pages, `mlock`, `MADV_DONTDUMP`, and their undoing), which is most
/// of what a process that reads one secret spends on its keys; parts of one slab cost two `mprotect`s
/// each. The slab is locked, never dumped and fenced by guard pages as any secure allocation; the
/// guard pages fence the slab, not each part from its neighbours, as for keys made together.
///
/// A part is wiped when its `SecureBytes` goes. Parts are carved one after the other from the slab
/// being filled; a slab that has no room left is freed when its last part goes, and the slab being
/// filled, once empty, is reused from its start. The page is read-only except while a part is being
/// filled or wiped: a count of writers opens it, and the last writer closes it again.
final class SecureSlab: @unchecked Sendable {
    // @unchecked: `used`, `live` and `writers` change only under `SecureSlab.state`'s lock.

    /// The bytes of a slab: one page of `sodium_malloc` less its 16-byte canary, so that the slab starts
    /// 16-byte aligned (the allocation ends at its guard page).
    static let byteCount = 4080
    /// The largest part taken from a slab; a larger buffer gets an allocation of its own.
    static let largestPart = 512
    /// Parts are multiples of this, so that each starts 16-byte aligned (keys and byte strings; not
    /// libsodium's hash states, which want 64 and are never kept here).
    static let alignment = 16

    private let base: UnsafeMutableRawPointer
    private var used = 0
    private var live = 0
    private var writers = 0

    private init(base: UnsafeMutableRawPointer) { self.base = base }

    /// The slab parts are being carved from.
    private static let state = Mutex<SecureSlab?>(nil)

    /// A zeroed, writable part of `count` bytes (1 through `largestPart`) and its slab. Call
    /// `finishedFilling` when it is filled, or `release(_:_:count:filling:)` with `filling: true` when
    /// filling failed.
    static func allocatePart(_ count: Int) throws(CryptoError) -> (pointer: UnsafeMutableRawPointer, slab: SecureSlab) {
        precondition(count > 0 && count <= largestPart, "a slab part of \(count) bytes")
        let size = (count + alignment - 1) / alignment * alignment
        return try state.withLock { (current) throws(CryptoError) -> (UnsafeMutableRawPointer, SecureSlab) in
            let slab: SecureSlab
            var isNew = false
            if let filling = current, filling.used + size <= byteCount || filling.live == 0 {
                slab = filling
                if slab.used + size > byteCount { slab.used = 0 }  // empty, and wiped part by part: reuse it
            } else {
                guard let memory = sodium_malloc(byteCount) else {
                    throw CryptoError(
                        .allocationFailed, "cannot allocate secure memory (out of memory or locked-memory limit)")
                }
                sodium_memzero(memory, byteCount)
                slab = SecureSlab(base: memory)
                isNew = true
                current = slab  // the full one is freed when its last part goes
            }
            let pointer = slab.base + slab.used
            slab.used += size
            slab.live += 1
            if isNew { slab.writers = 1 } else { slab.beginWriting() }  // a new slab is writable already
            return (pointer, slab)
        }
    }

    /// The part that `allocatePart` gave is filled: the page is read-only again unless another part
    /// is being filled.
    static func finishedFilling(_ slab: SecureSlab) {
        state.withLock { _ in slab.endWriting() }
    }

    /// Wipes the part of `count` bytes at `pointer` (`filling`: its filling failed), and frees the slab
    /// when that was its last part and parts are no longer carved from it.
    static func release(_ slab: SecureSlab, _ pointer: UnsafeMutableRawPointer, count: Int, filling: Bool) {
        state.withLock { current in
            if !filling { slab.beginWriting() }
            sodium_memzero(pointer, count)
            slab.live -= 1
            if slab.live == 0, current !== slab {
                // No part and no writer is left (each writer holds a part): sodium_free wipes the page
                // again, checks the canary and unmaps.
                sodium_free(slab.base)
            } else {
                slab.endWriting()
            }
        }
    }

    private func beginWriting() {
        if writers == 0 { _ = sodium_mprotect_readwrite(base) }
        writers += 1
    }

    private func endWriting() {
        writers -= 1
        if writers == 0 { _ = sodium_mprotect_readonly(base) }
    }
}
