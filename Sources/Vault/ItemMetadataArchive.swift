import FoundationEssentials
import VaultArchive
import VaultCrypto

/// `ItemRecordCodec.Metadata`'s archive written and read by hand: the same bytes as
/// `VaultArchive.encode` of it, without building a CBOR tree and walking it through `Codable`, whose
/// generic code a CLI process paid for on first use (a fifth of a `vault get`'s instructions, a quarter
/// of a `vault put`'s).
///
/// Both directions cover the shape a record has; anything else gives nil, and the caller uses
/// `VaultArchive`, which stays the definition of the format: a group in the attributes (the vault
/// never stores one there), data-typed keys (a `Set`, which `VaultArchive` writes and reads with rules
/// of its own for hashed collections: such records, which `Security` makes, take the slower path), a
/// date the archive refuses, and on reading anything that `encode` would not write (a null value, an
/// unknown key, bytes the archive refuses), which `VaultArchive` then reads or refuses with an error
/// naming the item.
enum ItemMetadataArchive {
    /// The archive of `metadata`, byte for byte `VaultArchive.encode(metadata)`; nil where that path
    /// must decide (above), or past `maxSize` bytes.
    static func encode(_ metadata: ItemRecordCodec.Metadata, maxSize: Int) -> [UInt8]? {
        var writer = CBORWriter(capacity: 192)
        writer.bytes.append(contentsOf: CBORWriter.envelope)
        // The map's keys in their deterministic order: the shorter first, then bytewise.
        let optional = [metadata.client != nil, metadata.writer != nil, metadata.deleted != nil]
        writer.writeHead(5, UInt64(6 + optional.count(where: \.self)))
        if let client = metadata.client {
            writer.writeText("client")
            writer.writeText(client)
        }
        if let uid = metadata.writer {
            writer.writeText("writer")
            writer.writeHead(0, UInt64(uid))
        }
        writer.writeText("created")
        guard writer.writeDate(metadata.created) else { return nil }
        if let deleted = metadata.deleted {
            writer.writeText("deleted")
            writer.bytes.append(deleted ? 0xF5 : 0xF4)
        }
        writer.writeText("modified")
        guard writer.writeDate(metadata.modified) else { return nil }
        writer.writeText("itemClass")
        writer.writeText(metadata.itemClass.rawValue)
        writer.writeText("attributes")
        guard write(metadata.attributes, to: &writer) else { return nil }
        writer.writeText("generation")
        writer.writeHead(0, metadata.generation)
        writer.writeText("persistentID")
        writer.writeBytes(metadata.persistentID)
        return writer.bytes.count <= maxSize ? writer.bytes : nil
    }

    /// The metadata in `bytes`, when they are exactly what `encode` writes for it; nil otherwise.
    static func decode(_ bytes: ArraySlice<UInt8>, maxSize: Int) -> ItemRecordCodec.Metadata? {
        guard bytes.count <= maxSize else { return nil }
        var reader = CBORReader(bytes)
        guard reader.envelope(), let count = reader.head(5), (6...9).contains(count) else { return nil }
        /// The key `key` when it comes next (the reader is a value: a copy looks ahead).
        func optionalKey(_ key: String) -> Bool {
            var ahead = reader
            guard ahead.key(key) else { return false }
            reader = ahead
            return true
        }
        var client: String?
        var writer: UInt32?
        var deleted: Bool?
        if optionalKey("client") {
            guard let text = reader.text() else { return nil }
            client = text
        }
        if optionalKey("writer") {
            guard let uid = reader.unsigned().flatMap({ UInt32(exactly: $0) }) else { return nil }
            writer = uid
        }
        guard reader.key("created"), let created = reader.date() else { return nil }
        if optionalKey("deleted") {
            guard let flag = reader.bool() else { return nil }
            deleted = flag
        }
        guard reader.key("modified"), let modified = reader.date(),
            reader.key("itemClass"), let itemClass = reader.text().flatMap(ItemClass.init(rawValue:)),
            reader.key("attributes"), let attributes = readAttributes(&reader),
            reader.key("generation"), let generation = reader.unsigned(),
            reader.key("persistentID"), let persistentID = reader.bytes(),
            reader.isAtEnd, count == 6 + [client != nil, writer != nil, deleted != nil].count(where: \.self)
        else { return nil }
        return ItemRecordCodec.Metadata(
            itemClass: itemClass, attributes: attributes, created: created, modified: modified,
            persistentID: Data(persistentID), generation: generation, client: client, writer: writer,
            deleted: deleted)
    }

    /// The date `date` reads back as after a write and a read of the archive; nil for one it refuses.
    static func archived(_ date: Date) -> Date? {
        var writer = CBORWriter(capacity: 16)
        guard writer.writeDate(date) else { return nil }
        var reader = CBORReader(writer.bytes[...])
        return reader.date()
    }

    /// The synthesised `Codable` keys of `ItemAttributes`, in the order their encodings sort: the
    /// shorter first, then bytewise (`ItemMetadataArchiveTests` checks them against the type's stored
    /// properties and against the key order of an archive of every attribute).
    enum Field: Int, CaseIterable {
        case path, port, type, label, server, account, comment, creator, generic, service, `protocol`
        case accessible, isNegative, accessGroup, isInvisible, creationDate, dataTypedKeys, genericIsText
        case securityDomain, synchronizable, itemDescription, modificationDate, authenticationType

        /// The field's key in the archive: the property's name.
        var key: String {
            switch self {
            case .path: "path"
            case .port: "port"
            case .type: "type"
            case .label: "label"
            case .server: "server"
            case .account: "account"
            case .comment: "comment"
            case .creator: "creator"
            case .generic: "generic"
            case .service: "service"
            case .protocol: "protocol"
            case .accessible: "accessible"
            case .isNegative: "isNegative"
            case .accessGroup: "accessGroup"
            case .isInvisible: "isInvisible"
            case .creationDate: "creationDate"
            case .dataTypedKeys: "dataTypedKeys"
            case .genericIsText: "genericIsText"
            case .securityDomain: "securityDomain"
            case .synchronizable: "synchronizable"
            case .itemDescription: "itemDescription"
            case .modificationDate: "modificationDate"
            case .authenticationType: "authenticationType"
            }
        }
    }

    /// Writes the attributes' map (each set attribute under its key, in `Field`'s order); false for
    /// attributes only `VaultArchive` writes.
    private static func write(_ a: ItemAttributes, to writer: inout CBORWriter) -> Bool {
        guard a.accessGroup == nil, a.dataTypedKeys == nil else { return false }
        // 23 keys at most: the count fits in the head's byte, filled in at the end.
        let head = writer.bytes.count
        writer.bytes.append(0)
        var count: UInt8 = 0
        var next = 0
        while let field = Field(rawValue: next) {
            next += 1
            // Every field is named, so that a new attribute cannot be left out of the archive unseen.
            switch field {
            case .path: count += text(field, a.path, to: &writer)
            case .port:
                guard let port = a.port else { continue }
                count += key(field, to: &writer)
                writer.writeInt(Int64(port))
            case .type: count += code(field, a.type, to: &writer)
            case .label: count += text(field, a.label, to: &writer)
            case .server: count += text(field, a.server, to: &writer)
            case .account: count += text(field, a.account, to: &writer)
            case .comment: count += text(field, a.comment, to: &writer)
            case .creator: count += code(field, a.creator, to: &writer)
            case .generic:
                guard let generic = a.generic else { continue }
                count += key(field, to: &writer)
                writer.writeBytes(generic)
            case .service: count += text(field, a.service, to: &writer)
            case .protocol: count += text(field, a.protocol, to: &writer)
            case .accessible: count += text(field, a.accessible?.rawValue, to: &writer)
            case .isNegative: count += flag(field, a.isNegative, to: &writer)
            case .isInvisible: count += flag(field, a.isInvisible, to: &writer)
            case .creationDate, .modificationDate:
                guard let date = field == .creationDate ? a.creationDate : a.modificationDate else { continue }
                count += key(field, to: &writer)
                guard writer.writeDate(date) else { return false }
            case .genericIsText: count += flag(field, a.genericIsText, to: &writer)
            case .securityDomain: count += text(field, a.securityDomain, to: &writer)
            case .synchronizable: count += flag(field, a.synchronizable, to: &writer)
            case .itemDescription: count += text(field, a.itemDescription, to: &writer)
            case .authenticationType: count += text(field, a.authenticationType, to: &writer)
            case .accessGroup, .dataTypedKeys: continue
            }
        }
        writer.bytes[head] = 0xA0 | count
        return true
    }

    /// Writes `field`'s key; 1, for the map's count.
    private static func key(_ field: Field, to writer: inout CBORWriter) -> UInt8 {
        writer.writeText(field.key)
        return 1
    }

    /// Writes `field` with text `value` when it is set; the number of entries written.
    private static func text(_ field: Field, _ value: String?, to writer: inout CBORWriter) -> UInt8 {
        guard let value else { return 0 }
        writer.writeText(field.key)
        writer.writeText(value)
        return 1
    }

    /// Writes `field` with boolean `value` when it is set; the number of entries written.
    private static func flag(_ field: Field, _ value: Bool?, to writer: inout CBORWriter) -> UInt8 {
        guard let value else { return 0 }
        writer.writeText(field.key)
        writer.bytes.append(value ? 0xF5 : 0xF4)
        return 1
    }

    /// Writes `field` with four-character code `value` when it is set; the number of entries written.
    private static func code(_ field: Field, _ value: UInt32?, to writer: inout CBORWriter) -> UInt8 {
        guard let value else { return 0 }
        writer.writeText(field.key)
        writer.writeHead(0, UInt64(value))
        return 1
    }

    /// Reads the attributes' map as `write` writes it.
    private static func readAttributes(_ reader: inout CBORReader) -> ItemAttributes? {
        guard let count = reader.head(5) else { return nil }
        var a = ItemAttributes()
        // Each key must come after the one before it in `Field`'s order, as the scanner requires.
        var next = 0
        for _ in 0..<count {
            guard let name = reader.textBytes() else { return nil }
            var found: Field?
            while let field = Field(rawValue: next) {
                next += 1
                if name.span.hasSameBytes(as: field.key.utf8.span) {
                    found = field
                    break
                }
            }
            guard let field = found, read(field, into: &a, from: &reader) else { return nil }
        }
        return a
    }

    /// Reads the value of `field` into `a`.
    private static func read(_ field: Field, into a: inout ItemAttributes, from reader: inout CBORReader) -> Bool {
        func text(_ value: inout String?) -> Bool {
            value = reader.text()
            return value != nil
        }
        func flag(_ value: inout Bool?) -> Bool {
            value = reader.bool()
            return value != nil
        }
        func code(_ value: inout UInt32?) -> Bool {
            value = reader.unsigned().flatMap { UInt32(exactly: $0) }
            return value != nil
        }
        func date(_ value: inout Date?) -> Bool {
            value = reader.date()
            return value != nil
        }
        switch field {
        case .path: return text(&a.path)
        case .port:
            a.port = reader.integer().flatMap { Int(exactly: $0) }
            return a.port != nil
        case .type: return code(&a.type)
        case .label: return text(&a.label)
        case .server: return text(&a.server)
        case .account: return text(&a.account)
        case .comment: return text(&a.comment)
        case .creator: return code(&a.creator)
        case .generic:
            a.generic = reader.bytes().map { Data($0) }
            return a.generic != nil
        case .service: return text(&a.service)
        case .protocol: return text(&a.protocol)
        case .accessible:
            a.accessible = reader.text().flatMap(Accessibility.init(rawValue:))
            return a.accessible != nil
        case .isNegative: return flag(&a.isNegative)
        case .isInvisible: return flag(&a.isInvisible)
        case .creationDate: return date(&a.creationDate)
        case .genericIsText: return flag(&a.genericIsText)
        case .securityDomain: return text(&a.securityDomain)
        case .synchronizable: return flag(&a.synchronizable)
        case .itemDescription: return text(&a.itemDescription)
        case .modificationDate: return date(&a.modificationDate)
        case .authenticationType: return text(&a.authenticationType)
        case .accessGroup, .dataTypedKeys: return false
        }
    }
}
