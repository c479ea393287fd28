import VaultCrypto
import VaultStore

extension Vault {
    /// The secret of the item that `query` names by its full primary key, copied from the decrypted file
    /// straight into secure memory (locked against swap, between guard pages, wiped when it goes), with
    /// the item (its attributes, never its secret): for a caller that only writes the secret out (`vault
    /// get`), so that no ordinary heap copy of it outlives the read. The file's plaintext is in ordinary
    /// memory while it is decoded, and wiped then. The same search, checks and errors as
    /// `copyMatching`'s of one item; a query without a full primary key is `param`.
    package func secureSecret(for query: Query) throws(VaultError) -> (secret: SecureBytes, item: MatchedItem) {
        guard let primaryKey = query.fullPrimaryKey else {
            throw VaultError(.param, "a secret in secure memory is read by the item's full primary key")
        }
        /// The secret the decoding took, handed out of the store's read.
        final class Taken {
            var secret: SecureBytes?
        }
        let groups = try searchGroups(query)
        // As `find` does: searching several groups, one that cannot be read is said only when no other
        // holds the item.
        let asideToo = query.attributes.accessGroup == nil && groups.count > 1
        var setAside: VaultError?
        for group in groups {
            let id: ItemID
            do {
                id = try engine.itemID(group, primaryKey)
            } catch  where query.attributes.accessGroup == nil && error.isMissingGroup {
                continue  // as `find` does: a group of the client's that the vault does not have holds nothing
            } catch  where asideToo && error.status != .interactionNotAllowed {
                setAside = setAside ?? error
                continue
            }
            let taken = Taken()
            let engine = engine
            let read: ItemRecord?
            do {
                read = try engine.store.read(ItemLocation(group: group.name, id: id)) {
                    (bytes, path) throws(VaultError) -> ItemRecord in
                    let record = try engine.decodeWithoutSecret(bytes, path: path)
                    do {
                        taken.secret = try SecureBytes(copying: bytes, range: ItemRecordCodec.secretRange(of: bytes))
                    } catch {
                        throw VaultError(
                            .notAvailable, "cannot hold the secret in secure memory: \(error)", cause: error)
                    }
                    return record
                }
            } catch  where asideToo && error.status != .interactionNotAllowed {
                setAside = setAside ?? error
                continue
            }
            guard let record = read, let secret = taken.secret else { continue }
            guard query.matches(record, group: group) else {
                // The file of this key holds another item's record: damage, not "not found".
                guard record.primaryKey == primaryKey else {
                    throw VaultError(.decode, "\(engine.filePath(group, id)): \(ItemEngine.misnamedRecord)")
                }
                continue
            }
            return (secret, MatchedItem(LocatedItem(group: group, id: id, record: record), returning: [.attributes]))
        }
        throw setAside ?? notFound(query)
    }
}

extension ItemEngine {
    /// `decode` without the secret: the record's `data` is empty, and the caller takes the secret from
    /// the plaintext itself (`ItemRecordCodec.secretRange`).
    func decodeWithoutSecret(_ bytes: [UInt8], path: () -> String) throws(VaultError) -> ItemRecord {
        do {
            return try ItemRecordCodec.decode(bytes, cache: metadataCache, keepingSecret: false)
        } catch {
            throw VaultError(.decode, "\(path()) decrypted but is not a valid item record: \(error)", cause: error)
        }
    }
}
