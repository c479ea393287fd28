import VaultCrypto
import VaultSystem

/// Rollback detection. Next to `<id>.item` the store keeps `.gen.<id>`, a symbolic link that is never
/// followed: its target text is `1:<generation, 16 hex>:<tag, 32 hex>`, where the tag is a keyed
/// BLAKE2b-128 (group index key, personalisation `vault.gen.v1`) of vault id, group, item id,
/// persistent id and generation. A symlink's text is file system metadata, so the record becomes
/// durable with the directory fsync that the item's rename needs anyway: no second fsync round trip.
///
/// Order: the item is renamed into place first, the record second, then the one directory fsync
/// (`ItemWrite`). Readers read the record first and the item second, so a concurrent update can never
/// make a reader see a record newer than the item (no false alarm). A record of another persistent id
/// (a leftover of a deleted item) or with a wrong tag is ignored, as is a missing one (items written
/// before records existed, a crash between the two renames); see docs/RELIABILITY.md for what that
/// leaves undetected. The text `moving` marks an item that a writer is moving to another key
/// (`Moves`).
enum GenerationRecord {
    static let prefix = ".gen."
    /// The record of an item that a writer is moving to another key: readers then check the move's
    /// intent note (and skip the rollback check until the move is done).
    static let movingText = "moving"
    static let movingBytes = Array(movingText.utf8)
    static let domain = KeyDerivation.Domain("vault.gen.v1")
    static let tagByteCount = 16

    /// A record as read from disk, before it is checked against the item (the check needs the item's
    /// persistent id, which is inside the encrypted file).
    struct Recorded: Sendable, Equatable {
        let generation: UInt64
        let tag: [UInt8]
    }

    /// What a reader finds in an item's record: a recorded generation, the `moving` mark, or neither.
    struct Found: Sendable {
        let recorded: Recorded?
        let moving: Bool

        static let none = Found(recorded: nil, moving: false)
    }

    static func name(_ id: ItemID) -> String { id.name(prefixedBy: prefix) }

    /// The tag of `location` at `version`, under the group's index key, bound to what the group's
    /// items are bound to (`GroupKeys.binding`: the group id).
    static func tag(key: SymmetricKey, binding: [UInt8], location: ItemLocation, version: ItemVersion)
        throws(StoreError) -> [UInt8]
    {
        // The layer above bounds a persistent id (16 bytes); one of another record could be longer.
        guard let persistentIDCount = UInt8(exactly: version.persistentID.count) else {
            throw StoreError(
                .integrity,
                "item \(location.id) of group \(location.group) has a persistent id of \(version.persistentID.count) "
                    + "bytes; it is damaged")
        }
        var message = binding
        location.group.appendLengthPrefixed(to: &message)
        location.id.appendHexDigits(to: &message)
        message.append(persistentIDCount)
        message += version.persistentID
        message.appendBigEndian(version.generation)
        do {
            return try KeyDerivation.keyedHash(message, key: key, domain: domain, outputByteCount: tagByteCount)
        } catch {
            throw StoreError.crypto(error, "cannot compute the generation record of \(location)")
        }
    }

    /// Whether `recorded` is an authentic record of `location` at a later generation than `version`,
    /// under the group's index `key` and `binding`: then the item file was replaced with an older copy
    /// of itself (a rollback).
    static func provesRollback(
        _ recorded: Recorded, of version: ItemVersion, key: SymmetricKey, binding: [UInt8], location: ItemLocation
    ) throws(StoreError) -> Bool {
        guard recorded.generation > version.generation else { return false }
        let claimed = ItemVersion(persistentID: version.persistentID, generation: recorded.generation)
        // Not constant-time: the tag is not a secret and the comparison reveals nothing useful.
        return try tag(key: key, binding: binding, location: location, version: claimed) == recorded.tag
    }

    /// What a deleted item's record says when no tombstone was written (a damaged item removed, a move
    /// finished by recovery): the number its deletion took, so that an item made again under the name
    /// carries on the numbering of its kept versions (`ItemHistory`).
    static let deletedPrefix = "deleted:"

    static func deletedText(_ generation: UInt64) -> String {
        var digits: [UInt8] = []
        generation.forEachBigEndianByte { Hex.append($0, to: &digits) }
        return deletedPrefix + String(decoding: digits, as: UTF8.self)
    }

    /// The generation a record's text gives (a tagged record's, or a deletion's), unchecked.
    static func generation(ofText text: String) -> UInt64? {
        let digits: Substring
        if text.hasPrefix(deletedPrefix) {
            digits = text.dropFirst(deletedPrefix.count)
        } else {
            let fields = text.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 3, fields[0] == "1" else { return nil }
            digits = fields[1]
        }
        guard digits.utf8.count == 16, digits.utf8.allSatisfy({ Hex.value(ofDigit: $0) != nil }) else { return nil }
        return UInt64(digits, radix: 16)
    }

    /// The generation item `id`'s record names (a tagged record's, or a deletion's), unchecked; nil
    /// without a record or for one that names none (`moving`).
    static func recordedGeneration(_ id: ItemID, in directory: FileDescriptor) -> UInt64? {
        (try? readText(id, in: directory, itemPath: FilePath(id.fileName))).flatMap { $0 }
            .flatMap(generation(ofText:))
    }

    static func text(generation: UInt64, tag: [UInt8]) -> String {
        // In one buffer: every update writes a record.
        var text: [UInt8] = []
        text.reserveCapacity(2 + 16 + 1 + 2 * tag.count)
        text.append(UInt8(ascii: "1"))
        text.append(UInt8(ascii: ":"))
        generation.forEachBigEndianByte { Hex.append($0, to: &text) }
        text.append(UInt8(ascii: ":"))
        for byte in tag { Hex.append(byte, to: &text) }
        return String(decoding: text, as: UTF8.self)
    }

    /// Parses "1:<16 hex>:<32 hex>" from bytes, without building strings (it runs on every read).
    static func parse(_ bytes: Span<UInt8>) -> Recorded? {
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
        return Recorded(generation: generation, tag: tag)
    }

    /// Whether a record's text is the `moving` mark.
    static func isMoving(_ bytes: Span<UInt8>) -> Bool {
        let mark = movingBytes
        guard bytes.count == mark.count else { return false }
        for i in 0..<mark.count where bytes[i] != mark[i] { return false }
        return true
    }

    /// Missing, not a link (EINVAL), or too long: no record.
    static func isAbsent(_ error: Errno) -> Bool {
        // A switch, not `[…].contains`: an item never updated has no record, so this runs on its every read,
        // and the array literal was an allocation each time.
        switch error {
        case .noSuchFileOrDirectory, .invalidArgument, .nameTooLong: true
        default: false
        }
    }

    /// The record of item `id` in `directory`, parsed from a stack buffer (this runs on every read).
    static func read(_ id: ItemID, in directory: FileDescriptor, itemPath: @autoclosure () -> FilePath)
        throws(StoreError) -> Found
    {
        do {
            return try directory.withSymbolicLinkAt(entryName(id)) { bytes in
                guard let bytes else { return Found.none }
                return Found(recorded: parse(bytes), moving: isMoving(bytes))
            }
        } catch {
            if isAbsent(error) { return .none }
            throw StoreError.system(error, .readLink, "read the generation record of", path: itemPath())
        }
    }

    /// `name(id)` built on the stack, for the reads (every get, and every item of a query by fingerprint).
    static func entryName(_ id: ItemID) -> EntryName {
        var name = EntryName()
        name.append(prefix)
        name.append(id.fileName, droppingLast: ItemID.fileSuffix.utf8.count)
        // `.gen.` and 64 hex digits always make a name. A refused one would read as no record (EINVAL and
        // ENAMETOOLONG are what `isAbsent` takes for one), and so skip the rollback check: never let it.
        precondition(!name.isRefused, "the generation record name of \(id) is not a directory entry name")
        return name
    }

    /// The record's text as it is (for fingerprints), or nil when there is none.
    static func readText(_ id: ItemID, in directory: FileDescriptor, itemPath: @autoclosure () -> FilePath)
        throws(StoreError) -> String?
    {
        do {
            return try directory.readSymbolicLinkAt(entryName(id))
        } catch {
            if isAbsent(error) { return nil }
            throw StoreError.system(error, .readLink, "read the generation record of", path: itemPath())
        }
    }
}
