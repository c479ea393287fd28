/// An item's next file and its generation record's text, made for a write (`WriteTransaction.write`
/// under the lock, `VaultStore.prepareWrite` before it): sealed under the group's current key and
/// bound to the group, the record from generation 2 on.
struct SealedItem {
    let contents: [UInt8]
    /// The keys it was sealed with (their generation, binding, sharing).
    let keys: GroupKeys
    /// The generation record's text; nil at generation 1 or without a version (no record is kept).
    let recordText: String?
}

extension VaultStore {
    /// `plaintext` sealed as the next file of `item` under `protectionClass`'s key, with the record of
    /// `version` when it is past generation 1; `locked` when the store lacks that class key.
    func seal(_ plaintext: [UInt8], as item: ItemLocation, protectionClass: ProtectionClass, version: ItemVersion?)
        throws(StoreError) -> SealedItem
    {
        let (key, keys) = try encryptionKey(protectionClass, for: item)
        let contents = try ItemFile.seal(
            plaintext, key: key, protectionClass: protectionClass,
            generation: keys.currentGeneration, binding: keys.binding, location: item)
        guard let version, version.generation > 1 else {
            return SealedItem(contents: contents, keys: keys, recordText: nil)
        }
        let tag = try GenerationRecord.tag(key: keys.index, binding: keys.binding, location: item, version: version)
        return SealedItem(
            contents: contents, keys: keys, recordText: GenerationRecord.text(generation: version.generation, tag: tag))
    }
}
