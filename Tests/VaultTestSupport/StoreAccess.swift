import VaultStore

/// Item writes and reads of opaque plaintexts, as the store-level tests make them (no versions, no
/// records of the layer above).
extension VaultStore {
    /// Writes `bytes` as item `id` of `group`, under the write lock.
    package func put(_ bytes: [UInt8], group: GroupName, id: ItemID, protectionClass: ProtectionClass = .always)
        throws(StoreError)
    {
        try withWriteLock(groups: [], creating: [group]) { (tx) throws(StoreError) in
            try tx.write(bytes, to: ItemLocation(group: group, id: id), protectionClass: protectionClass)
        }
    }

    /// The plaintext of item `id` of `group`, or nil when there is none.
    package func get(group: GroupName, id: ItemID) throws(StoreError) -> [UInt8]? {
        try readPlaintext(group: group, id: id)?.withBytes { $0 }
    }

    /// Removes item `id` of `group` under the write lock; false when there was none.
    @discardableResult
    package func delete(group: GroupName, id: ItemID) throws(StoreError) -> Bool {
        try withWriteLock(groups: [group]) { (tx) throws(StoreError) in
            try tx.delete(ItemLocation(group: group, id: id))
        }
    }
}
