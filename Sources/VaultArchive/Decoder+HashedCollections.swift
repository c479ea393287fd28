import FoundationEssentials

/// Whether `type` has the size of a `Dictionary` or a `Set` (one reference each, whatever the
/// elements): a type of another size is neither, and needs no dynamic cast to say so.
@inline(__always)
func mayBeHashedCollection<T>(_ type: T.Type) -> Bool {
    MemoryLayout<T>.size == MemoryLayout<[Int: Int]>.size || MemoryLayout<T>.size == MemoryLayout<Set<Int>>.size
}

/// Collections that Swift's own `init(from:)` fills by hashing: `Dictionary` and `Set`.
///
/// Two items of the archive that are equal in the target type would merge silently, losing a value and
/// changing the bytes on re-encoding; the scanner only rules out equal bytes among map keys, while Swift's
/// `String` also treats canonically equivalent text as equal ("é" as U+00E9 and as "e" + U+0301), and a
/// dictionary written as an array of pairs, or a set, may hold equal items. Such a collection is refused.
protocol HashedCollectionDecodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self
}

extension Dictionary: HashedCollectionDecodable where Key: Decodable, Value: Decodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self {
        if Key.self == Int.self {
            // Through `Any`: a direct `as! Self` from `[Int: Value]` would convert the dictionary element by element.
            return try intKeyed(item, path: path, state: state) as Any as! Self
        }
        let decoder = ArchiveDecoder(value: item, codingPath: path, state: state)
        let result = try state.decode(Self.self, with: decoder)
        // Swift's init(from:) reads each map entry, or each key/value pair of the array form, once and adds it.
        switch item {
        case .map(let entries) where result.count != decoder.itemsRead:
            throw mergedKeys(entries, path: path)
        case .array(let items) where result.count != decoder.itemsRead / 2:
            throw mergedPairs(items, path: path, state: state)
        default:
            return result
        }
    }

    /// `[Int: V]`, read from a CBOR map with integer keys only.
    private static func intKeyed(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> [Int: Value] {
        guard case .map(let entries) = item else {
            throw ArchiveDecoder.mismatch(Self.self, item, "a map", path)
        }
        var result: [Int: Value] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            let key: Int
            switch entry.key {
            case .unsigned(let u) where u <= UInt64(Int.max):
                key = Int(u)
            case .negative(let n) where n <= UInt64(Int.max):
                key = -1 - Int(n)
            default:
                throw ArchiveDecoder.corrupted(
                    path,
                    "a map decoded as [Int: \(Value.self)] needs Int keys, found \(entry.key.kindDescription)"
                )
            }
            // The scanner has already rejected duplicate keys, so this never overwrites.
            result[key] = try ArchiveDecoder.unbox(
                entry.value,
                as: Value.self,
                path: path + [ArchiveCodingKey(intValue: key)],
                state: state
            )
        }
        return result
    }

    /// The error for two text keys of a map that are equal as `Key` (found again by converting each key the
    /// way Swift's `init(from:)` does).
    private static func mergedKeys(_ entries: [CBORMapEntry], path: [any CodingKey]) -> DecodingError {
        let texts = entries.map { entry -> String? in
            if case .text(let s) = entry.key { return s }
            return nil
        }
        let keyType = Key.self as? any CodingKeyRepresentable.Type
        if let keyType, let (first, second) = firstEqualPair(texts.indices, { texts[$0].flatMap { key(keyType, $0) } }),
            let a = texts[first], let b = texts[second]
        {
            let why =
                Key.self == String.self
                ? "are two keys that Swift's String treats as equal (canonically equivalent, different UTF-8)"
                : "are equal as \(Key.self)"
            return ArchiveDecoder.corrupted(
                path + [ArchiveCodingKey(stringValue: b)],
                "the map keys \(UTF8Text.quoted(a)) and \(UTF8Text.quoted(b)) \(why): decoding them as \(Self.self) "
                    + "would merge two entries and lose a value"
            )
        }
        return ArchiveDecoder.corrupted(path, "map keys are equal as \(Key.self): \(Self.self) would merge entries")
    }

    private static func key<K: CodingKeyRepresentable>(_ type: K.Type, _ text: String) -> Key? {
        // Swift's own dictionary coding key: the text, and its integer value if it has one.
        var codingKey = ArchiveCodingKey(stringValue: text)
        codingKey.intValue = Int(text)
        return K(codingKey: codingKey) as? Key
    }

    /// The error for two keys of the array form (keys and values alternating) that are equal as `Key`.
    private static func mergedPairs(_ items: [CBOR], path: [any CodingKey], state: DecodeState) -> DecodingError {
        mergeError(
            items, at: stride(from: 0, to: items.count - 1, by: 2), as: Key.self, in: Self.self, path: path,
            state: state, noun: "keys", merging: "merge entries", losing: "merge two entries and lose a value")
    }
}

extension Set: HashedCollectionDecodable where Element: Decodable {
    static func archiveDecode(_ item: CBOR, path: [any CodingKey], state: DecodeState) throws -> Self {
        let decoder = ArchiveDecoder(value: item, codingPath: path, state: state)
        let result = try state.decode(Self.self, with: decoder)
        // Swift's init(from:) reads each element once and inserts it.
        guard case .array(let items) = item, result.count != decoder.itemsRead else { return result }
        throw mergeError(
            items, at: items.indices, as: Element.self, in: Self.self, path: path, state: state, noun: "elements",
            merging: "merge them", losing: "keep only one")
    }
}

/// The error for two of `items` (at `indices`) that are equal as `T` and would merge in `collection`:
/// naming the first such pair when one is found (`noun` the items, `losing` what decoding would do),
/// else the collection as a whole (`merging`).
private func mergeError<T: Decodable & Hashable>(
    _ items: [CBOR], at indices: some Sequence<Int>, as type: T.Type, in collection: Any.Type,
    path: [any CodingKey], state: DecodeState, noun: String, merging: String, losing: String
) -> DecodingError {
    let pair = firstEqualPair(indices) { try? ArchiveDecoder.unbox(items[$0], as: T.self, path: path, state: state) }
    guard let (first, second) = pair else {
        return ArchiveDecoder.corrupted(path, "\(noun) are equal as \(T.self): \(collection) would \(merging)")
    }
    return ArchiveDecoder.corrupted(
        path + [ArchiveCodingKey(index: second)],
        "the \(noun) at index \(first) and \(second) \(equalItems(items[first], items[second], T.self)): "
            + "decoding them as \(collection) would \(losing)")
}

/// The first two of `indices` whose values (nil: skipped) are equal, found by hashing; for error messages only.
private func firstEqualPair<H: Hashable>(_ indices: some Sequence<Int>, _ value: (Int) -> H?) -> (Int, Int)? {
    var seen: [H: Int] = [:]
    for index in indices {
        guard let v = value(index) else { continue }
        if let earlier = seen.updateValue(index, forKey: v) { return (earlier, index) }
    }
    return nil
}

/// Why two items of a collection are one value of `type`, for an error message.
private func equalItems(_ a: CBOR, _ b: CBOR, _ type: Any.Type) -> String {
    guard case .text(let x) = a, case .text(let y) = b else { return "are equal as \(type)" }
    let texts = "(\(UTF8Text.quoted(x)) and \(UTF8Text.quoted(y)))"
    if type == String.self, !UTF8Text.equal(x, y) {
        return texts + " are two values that Swift's String treats as equal (canonically equivalent, different UTF-8)"
    }
    return texts + " are equal as \(type)"
}
