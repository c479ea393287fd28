import Synchronization

/// A thread-safe dictionary that a vault handle keeps to avoid repeating work (decoding, hashing,
/// decrypting). Bounded: it is emptied when it reaches `capacity`, so a handle over a huge vault cannot
/// grow without limit; a miss only costs the work again. Never holds secrets.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private let entries = Mutex<[Key: Value]>([:])
    let capacity: Int

    init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    subscript(key: Key) -> Value? {
        entries.withLock { $0[key] }
    }

    func insert(_ value: Value, for key: Key) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
    }
}
