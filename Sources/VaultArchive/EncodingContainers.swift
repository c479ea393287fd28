import FoundationEssentials

struct ArchiveKeyedEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ArchiveEncoder
    let map: EncodeMap
    var codingPath: [any CodingKey] { encoder.codingPath }

    @inline(__always)
    private func put(_ value: CBOR, _ key: Key) {
        map.entries.append((EncodeKey(key), .value(value)))
    }

    mutating func encodeNil(forKey key: Key) throws { put(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { put(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { put(.text(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { put(.float(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { put(.float(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { put(ArchiveEncoder.int(Int64(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { put(ArchiveEncoder.int(Int64(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { put(ArchiveEncoder.int(Int64(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { put(ArchiveEncoder.int(Int64(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { put(ArchiveEncoder.int(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { put(.unsigned(UInt64(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { put(.unsigned(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        let node = try encoder.box(value, at: key)
        map.entries.append((EncodeKey(key), node))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type,
        forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [key], depth: encoder.depth + 1)
        map.entries.append((EncodeKey(key), .deferred(child)))
        return child.container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [key], depth: encoder.depth + 1)
        map.entries.append((EncodeKey(key), .deferred(child)))
        return child.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        superEncoder(forKey: ArchiveCodingKey.super)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        superEncoder(forKey: key as any CodingKey)
    }

    private func superEncoder(forKey key: any CodingKey) -> any Encoder {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [key], depth: encoder.depth + 1)
        map.entries.append((EncodeKey(key), .deferred(child)))
        return child
    }
}

struct ArchiveUnkeyedEncodingContainer: UnkeyedEncodingContainer {
    let encoder: ArchiveEncoder
    let array: EncodeArray
    let codingPath: [any CodingKey]
    var count: Int { array.items.count }

    private var nextKey: ArchiveCodingKey { ArchiveCodingKey(index: array.items.count) }

    mutating func encodeNil() throws { array.items.append(.value(.null)) }
    mutating func encode(_ value: Bool) throws { array.items.append(.value(.bool(value))) }
    mutating func encode(_ value: String) throws { array.items.append(.value(.text(value))) }
    mutating func encode(_ value: Double) throws { array.items.append(.value(.float(value))) }
    mutating func encode(_ value: Float) throws { array.items.append(.value(.float(Double(value)))) }
    mutating func encode(_ value: Int) throws { array.items.append(.value(ArchiveEncoder.int(Int64(value)))) }
    mutating func encode(_ value: Int8) throws { array.items.append(.value(ArchiveEncoder.int(Int64(value)))) }
    mutating func encode(_ value: Int16) throws { array.items.append(.value(ArchiveEncoder.int(Int64(value)))) }
    mutating func encode(_ value: Int32) throws { array.items.append(.value(ArchiveEncoder.int(Int64(value)))) }
    mutating func encode(_ value: Int64) throws { array.items.append(.value(ArchiveEncoder.int(value))) }
    mutating func encode(_ value: UInt) throws { array.items.append(.value(.unsigned(UInt64(value)))) }
    mutating func encode(_ value: UInt8) throws { array.items.append(.value(.unsigned(UInt64(value)))) }
    mutating func encode(_ value: UInt16) throws { array.items.append(.value(.unsigned(UInt64(value)))) }
    mutating func encode(_ value: UInt32) throws { array.items.append(.value(.unsigned(UInt64(value)))) }
    mutating func encode(_ value: UInt64) throws { array.items.append(.value(.unsigned(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        let node = try encoder.box(value, at: nextKey)
        array.items.append(node)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [nextKey], depth: encoder.depth + 1)
        array.items.append(.deferred(child))
        return child.container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [nextKey], depth: encoder.depth + 1)
        array.items.append(.deferred(child))
        return child.unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder {
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath + [nextKey], depth: encoder.depth + 1)
        array.items.append(.deferred(child))
        return child
    }
}

struct ArchiveSingleValueEncodingContainer: SingleValueEncodingContainer {
    let encoder: ArchiveEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    private func set(_ value: CBOR) {
        if encoder.node != nil {
            encoder.recordMisuse("a single value was encoded where a value was already encoded")
            return
        }
        encoder.node = .value(value)
    }

    mutating func encodeNil() throws { set(.null) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.text(value)) }
    mutating func encode(_ value: Double) throws { set(.float(value)) }
    mutating func encode(_ value: Float) throws { set(.float(Double(value))) }
    mutating func encode(_ value: Int) throws { set(ArchiveEncoder.int(Int64(value))) }
    mutating func encode(_ value: Int8) throws { set(ArchiveEncoder.int(Int64(value))) }
    mutating func encode(_ value: Int16) throws { set(ArchiveEncoder.int(Int64(value))) }
    mutating func encode(_ value: Int32) throws { set(ArchiveEncoder.int(Int64(value))) }
    mutating func encode(_ value: Int64) throws { set(ArchiveEncoder.int(value)) }
    mutating func encode(_ value: UInt) throws { set(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt8) throws { set(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt16) throws { set(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt32) throws { set(.unsigned(UInt64(value))) }
    mutating func encode(_ value: UInt64) throws { set(.unsigned(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        if encoder.node != nil {
            encoder.recordMisuse("a single value was encoded where a value was already encoded")
            return
        }
        if let leaf = try ArchiveEncoder.leaf(value, path: codingPath) {
            encoder.node = .value(leaf)
            return
        }
        // The value encodes itself into this same encoder (e.g. a wrapper type forwarding to its payload).
        guard encoder.depth < encoder.state.maxDepth else {
            throw EncodingError.invalidValue(
                value,
                EncodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "nesting deeper than the limit of \(encoder.state.maxDepth)"
                )
            )
        }
        let child = ArchiveEncoder(state: encoder.state, codingPath: codingPath, depth: encoder.depth + 1)
        encoder.node = try child.encodeComposite(value)
    }
}
