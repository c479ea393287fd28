import Synchronization

/// A thread-safe dictionary that a vault handle keeps to avoid repeating work (decoding, hashing,
/// decrypting), bounded in bytes: the entries it holds never add up to more than `byteCapacity` as
/// `cost` counts them, so a handle over a huge vault uses the same memory as one over a small vault.
/// A miss only costs the work again. Never holds secrets.
///
/// When an entry does not fit, it is not admitted (nothing read is evicted for it): a scan over more items
/// than fit keeps hitting the part that fits on every pass, where evicting the oldest entries would
/// have evicted each one just before the next pass asked for it. So that entries nobody asks for any
/// more (deleted items, old versions) do not hold the room for ever, a cache made with
/// `emptiesWhenRefusing` is emptied once it has refused as many entries as it holds; one without it
/// is kept clean by its owner (`removeAll(where:)`). A new value for a held key that does not fit
/// drops the old one.
///
/// What the handle writes goes in as a provisional entry (`insert(_:for:provisional:)`): admitted only
/// into room, never a refusal, and all dropped when that lets another entry fit. A handle that wrote
/// more than fits (a bulk load) then admits its next reads at once instead of refusing them
/// (docs/PERFORMANCE.md, "the sixth session").
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// An entry as the dictionary holds it.
    private typealias Slot = (value: Value, cost: Int, provisional: Bool)

    private struct Entries {
        var values: [Key: Slot] = [:]
        var bytes = 0
        var refused = 0
        /// The bytes of the provisional entries.
        var provisionalBytes = 0

        mutating func remove(_ key: Key) {
            guard let old = values.removeValue(forKey: key) else { return }
            bytes -= old.cost
            if old.provisional { provisionalBytes -= old.cost }
        }

        mutating func store(_ value: Value, cost: Int, provisional: Bool, for key: Key) {
            remove(key)
            values[key] = (value, cost, provisional)
            bytes += cost
            if provisional { provisionalBytes += cost }
        }

        mutating func removeProvisional() {
            guard provisionalBytes > 0 else { return }
            if provisionalBytes == bytes {
                values.removeAll(keepingCapacity: true)
            } else {
                values = values.filter { !$0.value.provisional }
            }
            bytes -= provisionalBytes
            provisionalBytes = 0
        }
    }

    private let entries = Mutex(Entries())
    /// The most bytes the entries may take, as `cost` counts them.
    let byteCapacity: Int
    private let heapCost: @Sendable (Key, Value) -> Int
    private let emptiesWhenRefusing: Bool

    /// What one entry is counted as: its key and value inline, twice (a dictionary's storage is between
    /// 3/8 and 3/4 full), plus the heap bytes `heapCost` gives for them (strings, arrays, boxes).
    static func cost(heap: Int) -> Int {
        2 * (MemoryLayout<Key>.stride + MemoryLayout<Slot>.stride) + heap
    }

    /// A cache of at most `byteCapacity` bytes whose entries own `heapCost(key, value)` bytes beyond
    /// their inline size.
    init(byteCapacity: Int, emptiesWhenRefusing: Bool = true, heapCost: @escaping @Sendable (Key, Value) -> Int) {
        self.byteCapacity = byteCapacity
        self.emptiesWhenRefusing = emptiesWhenRefusing
        self.heapCost = heapCost
    }

    /// The number of entries.
    var count: Int { entries.withLock { $0.values.count } }

    /// The bytes the entries take, as `cost` counts them.
    var byteCount: Int { entries.withLock { $0.bytes } }

    subscript(key: Key) -> Value? {
        entries.withLock { entries in
            // Bound by a pattern: `?.value` copied the whole entry and then destroyed it (a get hits this).
            guard case .some((let value, _, _)) = entries.values[key] else { return nil }
            return value
        }
    }

    /// Admits `value` under `key` if it fits (see the type's rules); `provisional` for what this handle
    /// wrote rather than read.
    func insert(_ value: Value, for key: Key, provisional: Bool = false) {
        let cost = Self.cost(heap: heapCost(key, value))
        entries.withLock { entries in
            let held = entries.values[key]
            // A write does not make what a read put there provisional (a key gives one value).
            let provisional = provisional && held?.provisional != false
            func fits() -> Bool { entries.bytes - (entries.values[key]?.cost ?? 0) + cost <= byteCapacity }
            // Provisional entries go only when that lets this one in: dropping them for an entry that is
            // refused anyway would rebuild the dictionary for nothing.
            let heldOrdinary = held.map { $0.provisional ? 0 : $0.cost } ?? 0
            if !fits(), entries.bytes - entries.provisionalBytes - heldOrdinary + cost <= byteCapacity {
                entries.removeProvisional()
            }
            guard fits() else {
                entries.remove(key)
                if provisional { return }
                entries.refused += 1
                if emptiesWhenRefusing, entries.refused > entries.values.count {
                    entries = Entries()
                    if cost <= byteCapacity { entries.store(value, cost: cost, provisional: false, for: key) }
                }
                return
            }
            entries.store(value, cost: cost, provisional: provisional, for: key)
        }
    }

    /// Removes the entries whose keys `shouldBeRemoved` accepts.
    func removeAll(where shouldBeRemoved: (Key) -> Bool) {
        entries.withLock { entries in
            for key in entries.values.keys where shouldBeRemoved(key) { entries.remove(key) }
        }
    }

    /// Empties the cache.
    func removeAll() {
        entries.withLock { $0 = Entries() }
    }
}
