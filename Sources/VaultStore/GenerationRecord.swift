import VaultCrypto
import VaultSystem

/// What the layer above knows about an item it writes: the persistent id that stays with the item and
/// the generation that grows with every update. The store keeps an authenticated copy of the latest
/// generation next to the item, so that an item file replaced with an older copy of itself is caught.
public struct ItemVersion: Sendable, Equatable {
    /// The item's persistent id (stable across updates).
    public let persistentID: [UInt8]
    /// The item's generation (1 when added, +1 on every update).
    public let generation: UInt64

    /// A version.
    public init(persistentID: [UInt8], generation: UInt64) {
        self.persistentID = persistentID
        self.generation = generation
    }
}

/// The generation record of one item as read from disk, before it is checked against the item
/// (the check needs the item's persistent id, which is inside the encrypted file).
public struct RecordedGeneration: Sendable, Equatable {
    let generation: UInt64
    let tag: [UInt8]
}

/// Rollback detection. Next to `<id>.item` the store keeps `.gen.<id>`, a symbolic link that is never
/// followed: its target text is `1:<generation, 16 hex>:<tag, 32 hex>`, where the tag is a keyed
/// BLAKE2b-128 (group index key, personalisation `vault.gen.v1`) of vault id, group, item id,
/// persistent id and generation. A symlink's text is file system metadata, so the record becomes
/// durable with the directory fsync that the item's rename needs anyway: no second fsync round trip.
///
/// Order: the item is renamed into place first, the record second, then the one directory fsync.
/// Readers read the record first and the item second, so a concurrent update can never make a
/// reader see a record newer than the item (no false alarm). A record of another persistent id (a
/// leftover of a deleted item) or with a wrong tag is ignored, as is a missing one (items written
/// before records existed, a crash between the two renames); see docs/RELIABILITY.md for what that
/// leaves undetected.
enum GenerationRecord {
    static let prefix = ".gen."
    /// The record of an item that a writer is moving to another key: readers then check the move's
    /// intent note (and skip the rollback check until the move is done).
    static let movingText = "moving"
    static let domain = KeyDerivation.Domain("vault.gen.v1")
    static let tagByteCount = 16

    static func name(_ id: ItemID) -> String { prefix + id.rawValue }

    static func tag(key: SecureBytes, vaultID: [UInt8], group: GroupName, id: ItemID, version: ItemVersion)
        throws(StoreError) -> [UInt8]
    {
        let groupBytes = Array(group.rawValue.utf8)
        var message = vaultID
        message.append(UInt8(groupBytes.count >> 8))
        message.append(UInt8(groupBytes.count & 0xff))
        message += groupBytes
        message += Array(id.rawValue.utf8)
        message.append(UInt8(version.persistentID.count))
        message += version.persistentID
        for shift in stride(from: 56, through: 0, by: -8) {
            message.append(UInt8((version.generation >> shift) & 0xff))
        }
        do {
            return try KeyDerivation.keyedHash(message, key: key, domain: domain, outputByteCount: tagByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot compute the generation record of item \(id) in group \(group)")
        }
    }

    static func text(generation: UInt64, tag: [UInt8]) -> String {
        "1:" + Hex.encode(withUnsafeBytes(of: generation.bigEndian) { Array($0) }) + ":" + Hex.encode(tag)
    }

    /// Parses "1:<16 hex>:<32 hex>" from bytes, without building strings (it runs on every read).
    static func parse(_ bytes: UnsafeRawBufferPointer) -> RecordedGeneration? {
        guard bytes.count == 2 + 16 + 1 + 2 * tagByteCount, bytes[0] == UInt8(ascii: "1"),
            bytes[1] == UInt8(ascii: ":"), bytes[18] == UInt8(ascii: ":")
        else { return nil }
        var generation: UInt64 = 0
        for i in 2..<18 {
            guard let v = Hex.value(ofDigit: bytes[i]) else { return nil }
            generation = generation << 4 | UInt64(v)
        }
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        for i in 0..<tagByteCount {
            guard let high = Hex.value(ofDigit: bytes[19 + 2 * i]), let low = Hex.value(ofDigit: bytes[20 + 2 * i])
            else { return nil }
            tag[i] = high << 4 | low
        }
        return RecordedGeneration(generation: generation, tag: tag)
    }

}

extension VaultStore {
    /// Reads item `id` of `group` like `readItemTransient`, together with its generation record, which
    /// is read first (one `readlinkat`; see `GenerationRecord`): check the pair with
    /// `checkNotRolledBack` once the item's version is known. `moving` is true when a writer marked the item as being moved to another key (see
    /// `WriteTransaction.markMoving`): only then must a reader look for the move's intent note.
    public func readItemTransientAndGeneration(group: GroupName, id: ItemID) throws(StoreError) -> (
        plaintext: TransientBytes, recorded: RecordedGeneration?, moving: Bool
    )? {
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let record = try generationRecord(in: directory, group: group, id: id)
        guard let plaintext = try readItemTransient(group: group, id: id) else { return nil }
        return (plaintext, record.recorded, record.moving)
    }

    /// The parsed generation record, read into a stack buffer (this runs on every read).
    func generationRecord(in directory: FileDescriptor, group: GroupName, id: ItemID) throws(StoreError) -> (
        recorded: RecordedGeneration?, moving: Bool
    ) {
        let result: Result<(RecordedGeneration?, Bool), Errno> = withUnsafeTemporaryAllocation(
            byteCount: 128, alignment: 1
        ) { buffer in
            Result { () throws(Errno) in
                let n = try directory.readSymbolicLinkAt(GenerationRecord.name(id), into: buffer)
                guard n < buffer.count else { return (nil, false) }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                return (GenerationRecord.parse(bytes), bytes.elementsEqual(GenerationRecord.movingText.utf8))
            }
        }
        do {
            return try result.get()
        } catch {
            // Missing, or not a link (EINVAL): no record.
            if [.noSuchFileOrDirectory, .invalidArgument, .nameTooLong].contains(error) { return (nil, false) }
            throw StoreError.system(error, "read the generation record of", path: itemPath(group, id))
        }
    }

    func generationRecordText(in directory: FileDescriptor, group: GroupName, id: ItemID) throws(StoreError)
        -> String?
    {
        do {
            return try directory.readSymbolicLinkAt(GenerationRecord.name(id))
        } catch {
            // Missing, or not a link (EINVAL), or too long: no record.
            if [.noSuchFileOrDirectory, .invalidArgument, .nameTooLong].contains(error) { return nil }
            throw StoreError.system(error, "read the generation record of", path: itemPath(group, id))
        }
    }

    /// Throws an `integrity` error naming the file when `recorded` (read before the item) is an
    /// authentic record of this item at a newer generation than `version`: the item file was replaced
    /// with an older copy of itself.
    public func checkNotRolledBack(_ recorded: RecordedGeneration?, group: GroupName, id: ItemID, version: ItemVersion)
        throws(StoreError)
    {
        guard let recorded, recorded.generation > version.generation else { return }
        let claimed = ItemVersion(persistentID: version.persistentID, generation: recorded.generation)
        let expected = try GenerationRecord.tag(
            key: try keys(for: group).index, vaultID: vaultID, group: group, id: id, version: claimed)
        // Not constant-time: the tag is not a secret and the comparison reveals nothing useful.
        guard expected == recorded.tag else { return }
        let path = itemPath(group, id)
        throw StoreError(
            .integrity,
            "\(path) is generation \(version.generation) but the vault recorded generation \(recorded.generation): "
                + "it was replaced with an older copy of itself (rollback)",
            path: path)
    }

    /// The record text for `version` of item `id`.
    func generationRecordText(group: GroupName, id: ItemID, version: ItemVersion) throws(StoreError) -> String {
        let tag = try GenerationRecord.tag(
            key: try keys(for: group).index, vaultID: vaultID, group: group, id: id, version: version)
        return GenerationRecord.text(generation: version.generation, tag: tag)
    }
}

/// What identifies one version of an item file without reading it: its generation record (read
/// first, as readers do) and the file's identity and times. Every update by the vault changes the
/// generation record, and any replacement of the file changes its inode or change time (which no user
/// can set), so an unchanged fingerprint means unchanged contents, once the file is settled
/// (`isSettled`).
public struct ItemFingerprint: Sendable, Hashable {
    let recordText: String?
    let device: UInt64
    let inode: UInt64
    let size: Int64
    let modificationNanoseconds: Int64
    let changeNanoseconds: Int64

    /// Whether the file last changed before `now`, a `FileTimestampClock` reading taken before the
    /// file was looked at. Change times are only as fine as that clock's tick, so a file changed in the
    /// current tick could be deleted and re-added (no record at generation 1, its inode reused) within
    /// it with an equal fingerprint: such a fingerprint must not be trusted yet ("racy clean", as git
    /// treats its index). Any later change is stamped at `now` or after.
    public func isSettled(now: Int64) -> Bool {
        changeNanoseconds < now
    }
}

extension VaultStore {
    /// The fingerprint of item `id` of `group`, or nil when there is no such file (one readlink and
    /// one stat, no decryption).
    public func fingerprint(group: GroupName, id: ItemID) throws(StoreError) -> ItemFingerprint? {
        guard let directory = try groupDirectory(group, create: false) else { return nil }
        let text = try generationRecordText(in: directory, group: group, id: id)
        let status: FileStatus
        do {
            status = try directory.statusAt(id.fileName)
        } catch {
            if error == .noSuchFileOrDirectory { return nil }
            throw StoreError.system(error, "inspect", path: itemPath(group, id))
        }
        return ItemFingerprint(
            recordText: text, device: status.device, inode: status.inode, size: status.size,
            modificationNanoseconds: status.modificationNanoseconds, changeNanoseconds: status.changeNanoseconds)
    }
}
