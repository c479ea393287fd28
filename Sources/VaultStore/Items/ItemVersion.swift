/// What the layer above knows about an item it writes: the persistent id that stays with the item and
/// the generation that grows with every update. The store keeps an authenticated copy of the latest
/// generation next to the item (`GenerationRecord`), so that an item file replaced with an older copy
/// of itself is caught, and compares versions to finish a move that a writer left half-done.
@usableFromInline package struct ItemVersion: Sendable, Equatable {
    /// The item's persistent id (stable across updates).
    package let persistentID: [UInt8]
    /// The item's generation (1 when added, +1 on every update).
    package let generation: UInt64

    /// A version.
    package init(persistentID: [UInt8], generation: UInt64) {
        self.persistentID = persistentID
        self.generation = generation
    }

    /// Whether `other` is this item at a later generation: the same persistent id, a higher generation.
    func isSuperseded(by other: ItemVersion) -> Bool {
        other.persistentID == persistentID && other.generation > generation
    }
}

/// A record of the layer above as decoded from an item's plaintext: the store needs its version.
@usableFromInline package protocol VersionedRecord {
    /// The record's persistent id and generation.
    var version: ItemVersion { get }
}

/// Reads the version out of an item's plaintext without the caller at hand: what the store's own
/// recovery of an interrupted move needs (nil for a plaintext it cannot decode).
package typealias ItemVersionReader = @Sendable (_ plaintext: [UInt8]) -> ItemVersion?
