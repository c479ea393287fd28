/// Turns bytes into a ``CBOR`` tree, accepting only the core deterministic encoding (RFC 8949 §4.2.1).
///
/// Every length and count is checked against the bytes left before anything is allocated, all arithmetic
/// is checked, recursion is bounded by `maxDepth`, and every violation is a `DecodingError.dataCorrupted`
/// whose coding path leads to the offending item and whose description names the byte offset.
package struct CBORScanner {
    private let input: [UInt8]
    private var position: Int
    private let maxDepth: Int
    /// Coding path of the item being scanned, above the open containers (the archive version's key).
    private var pathPrefix: [any CodingKey] = []
    /// The containers open around the item being scanned; the coding path is derived from it on failure only.
    private var stack: [Frame] = []
    /// The elements read so far of each open array.
    private var arrays: [[CBOR]] = []
    /// The entries read so far of each open map.
    private var maps: [[CBORMapEntry]] = []

    private init(input: [UInt8], position: Int, maxDepth: Int) {
        self.input = input
        self.position = position
        self.maxDepth = maxDepth
    }

    /// Scans a complete archive: the envelope (tag 55799, an array of two, version 1), one item, and nothing
    /// after it.
    package static func scanArchive(_ input: [UInt8], maxDepth: Int, maxSize: Int) throws -> CBOR {
        guard input.count <= maxSize else {
            throw corrupted([], "archive of \(input.count) bytes exceeds the size limit of \(maxSize) bytes")
        }
        guard input.count >= 3, input[0] == 0xD9, input[1] == 0xD9, input[2] == 0xF7 else {
            throw corrupted([], "not a vault archive: missing the self-describe tag 55799 (d9 d9 f7)")
        }
        guard input.count >= 4, input[3] == 0x82 else {
            throw corrupted([], "not a vault archive: expected an array of two items (82) at byte offset 3")
        }
        var scanner = CBORScanner(input: input, position: 4, maxDepth: maxDepth)
        let versionKey = ArchiveCodingKey(stringValue: "<archive version>")
        scanner.pathPrefix = [versionKey]
        let version = try scanner.scanItem(depth: 0)
        guard case .unsigned(1) = version else {
            if case .unsigned(let v) = version {
                throw corrupted([versionKey], "unsupported archive version \(v); this decoder reads version 1")
            }
            throw corrupted([versionKey], "not a vault archive: the version is \(version.kindDescription)")
        }
        scanner.pathPrefix = []
        let value = try scanner.scanItem(depth: 0)
        guard scanner.position == input.count else {
            throw corrupted(
                [],
                "\(input.count - scanner.position) trailing bytes after the archive at byte offset "
                    + "\(scanner.position)")
        }
        return value
    }

    /// Scans exactly one bare item (no envelope) that must fill `input`.
    package static func scanItem(_ input: [UInt8], maxDepth: Int) throws -> CBOR {
        var scanner = CBORScanner(input: input, position: 0, maxDepth: maxDepth)
        let value = try scanner.scanItem(depth: 0)
        guard scanner.position == input.count else {
            throw corrupted([], "trailing bytes at byte offset \(scanner.position)")
        }
        return value
    }

    static func corrupted(_ path: [any CodingKey], _ message: String) -> DecodingError {
        DecodingError.dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: message))
    }

    private func fail(_ message: String, at offset: Int) -> DecodingError {
        Self.corrupted(path, "\(message) at byte offset \(offset)")
    }

    /// The coding path of the item being scanned: array indices, map keys, and `<key N>` while a key is read.
    private var path: [any CodingKey] {
        var path = pathPrefix
        path.reserveCapacity(pathPrefix.count + stack.count)
        var arrayIndex = 0
        var mapIndex = 0
        // An index loop, not `for frame in stack`: see `text(_:_:)`.
        for frameIndex in 0..<stack.count {
            switch stack[frameIndex] {
            case .array:
                path.append(ArchiveCodingKey(index: arrays[arrayIndex].count))
                arrayIndex += 1
            case .map(_, let key, _, _):
                if let key {
                    path.append(Self.key(for: key))
                } else {
                    path.append(ArchiveCodingKey(stringValue: "<key \(maps[mapIndex].count)>"))
                }
                mapIndex += 1
            case .tag:
                break
            }
        }
        return path
    }

    private var remaining: Int { input.count - position }

    private mutating func readByte() throws -> UInt8 {
        guard position < input.count else { throw fail("unexpected end of input", at: position) }
        let b = input[position]
        position += 1
        return b
    }

    /// Reads `size` bytes as a big-endian unsigned integer; `what` names the item in the end-of-input error.
    private mutating func readBigEndian(_ size: Int, in what: String, headAt start: Int) throws -> UInt64 {
        guard size <= remaining else { throw fail("unexpected end of input in \(what)", at: start) }
        var value: UInt64 = 0
        for i in 0..<size { value = value << 8 | UInt64(input[position + i]) }
        position += size
        return value
    }

    /// Reads the argument of a head whose additional information is `info` (0...27), requiring the shortest form.
    private mutating func readArgument(_ info: UInt8, headAt start: Int) throws -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24...27:
            let size = 1 << Int(info - 24)
            let value = try readBigEndian(size, in: "a head", headAt: start)
            let minimum: UInt64
            switch size {
            case 1: minimum = 24
            case 2: minimum = 0x100
            case 4: minimum = 0x1_0000
            default: minimum = 0x1_0000_0000
            }
            guard value >= minimum else {
                throw fail("non-shortest head (argument \(value) written in \(size) bytes)", at: start)
            }
            return value
        case 31:
            throw fail("indefinite length items are not allowed", at: start)
        default:
            throw fail("reserved additional information \(info)", at: start)
        }
    }

    private static func key(for item: CBOR) -> any CodingKey {
        switch item {
        case .text(let s): return ArchiveCodingKey(stringValue: s)
        case .unsigned(let u) where u <= UInt64(Int.max): return ArchiveCodingKey(intValue: Int(u))
        case .negative(let n) where n <= UInt64(Int.max): return ArchiveCodingKey(intValue: -1 - Int(n))
        default: return ArchiveCodingKey(stringValue: "<\(item.kindDescription) key>")
        }
    }

    /// A container being filled while scanning; the scanner keeps these on an explicit stack instead of
    /// recursing, so hostile nesting cannot exhaust the thread's stack (depth is also limited by `maxDepth`).
    ///
    /// The elements themselves live in `arrays` and `maps` (one per open array or map, innermost last), where
    /// they are appended in place: an array held in an enum payload would be copied on every append.
    private enum Frame {
        case array(count: Int)
        case map(count: Int, key: CBOR?, previousKey: Range<Int>, keyStart: Int)
        case tag(UInt64)
    }

    private mutating func scanItem(depth: Int) throws -> CBOR {
        stack.removeAll(keepingCapacity: true)
        arrays.removeAll(keepingCapacity: true)
        maps.removeAll(keepingCapacity: true)
        readItems: while true {
            let start = position
            let initial = try readByte()
            let major = initial >> 5
            let info = initial & 0x1F
            var value: CBOR

            if major == 7 {
                value = try scanSimpleOrFloat(info, headAt: start)
            } else {
                let argument = try readArgument(info, headAt: start)
                switch major {
                case 0:
                    value = .unsigned(argument)
                case 1:
                    value = .negative(argument)
                case 2:
                    guard argument <= UInt64(remaining) else {
                        throw fail(
                            "byte string of \(argument) bytes is longer than the \(remaining) bytes left",
                            at: start
                        )
                    }
                    let end = position + Int(argument)
                    value = .bytes(Array(input[position..<end]))
                    position = end
                case 3:
                    guard argument <= UInt64(remaining) else {
                        throw fail(
                            "text string of \(argument) bytes is longer than the \(remaining) bytes left",
                            at: start
                        )
                    }
                    let end = position + Int(argument)
                    guard let text = UTF8Text.validated(input[position..<end]) else {
                        throw fail("invalid UTF-8 in a text string", at: start)
                    }
                    value = .text(text)
                    position = end
                case 4:
                    guard argument <= UInt64(remaining) else {
                        throw fail("array of \(argument) items cannot fit in the \(remaining) bytes left", at: start)
                    }
                    guard depth + stack.count < maxDepth else {
                        throw fail("nesting deeper than the limit of \(maxDepth)", at: start)
                    }
                    if argument == 0 {
                        value = .array([])
                    } else {
                        var items: [CBOR] = []
                        items.reserveCapacity(Int(argument))
                        arrays.append(items)
                        stack.append(.array(count: Int(argument)))
                        continue readItems
                    }
                case 5:
                    guard argument <= UInt64(remaining / 2) else {
                        throw fail("map of \(argument) entries cannot fit in the \(remaining) bytes left", at: start)
                    }
                    guard depth + stack.count < maxDepth else {
                        throw fail("nesting deeper than the limit of \(maxDepth)", at: start)
                    }
                    if argument == 0 {
                        value = .map([])
                    } else {
                        var entries: [CBORMapEntry] = []
                        entries.reserveCapacity(Int(argument))
                        maps.append(entries)
                        stack.append(.map(count: Int(argument), key: nil, previousKey: 0..<0, keyStart: position))
                        continue readItems
                    }
                default:  // 6
                    guard depth + stack.count < maxDepth else {
                        throw fail("nesting deeper than the limit of \(maxDepth)", at: start)
                    }
                    stack.append(.tag(argument))
                    continue readItems
                }
            }

            // `value` is complete: hand it to the enclosing containers, closing those that are now full.
            // Indexing, not `stack.last`: the generic accessor costs an allocation per call in the debug
            // builds the fuzzer runs.
            while !stack.isEmpty {
                switch stack[stack.count - 1] {
                case .tag(let tag):
                    stack.removeLast()
                    value = .tagged(tag, value)
                case .array(let count):
                    let top = arrays.count - 1
                    arrays[top].append(value)
                    if arrays[top].count < count { continue readItems }
                    stack.removeLast()
                    value = .array(arrays.removeLast())
                case .map(let count, let key, let previousKey, let keyStart):
                    let top = maps.count - 1
                    if let key {
                        maps[top].append(CBORMapEntry(key: key, value: value))
                        if maps[top].count < count {
                            stack[stack.count - 1] = .map(
                                count: count,
                                key: nil,
                                previousKey: previousKey,
                                keyStart: position
                            )
                            continue readItems
                        }
                        stack.removeLast()
                        value = .map(maps.removeLast())
                    } else {
                        // `value` is a key: it must sort strictly after the previous key (bytewise).
                        let keyRange = keyStart..<position
                        stack[stack.count - 1] = .map(
                            count: count, key: value, previousKey: keyRange, keyStart: keyStart)
                        if !maps[top].isEmpty {
                            let order = Self.compareBytes(input, previousKey, keyRange)
                            if order == 0 {
                                throw fail("duplicate map key", at: keyStart)
                            }
                            guard order < 0 else {
                                throw fail("map keys are not in deterministic (bytewise) order", at: keyStart)
                            }
                        }
                        continue readItems
                    }
                }
            }
            return value
        }
    }

    // This helper (and `UTF8Text.validated`, for text) works on a span rather than through `ArraySlice`
    // and the generic `Sequence` algorithms: the result is the same, but unspecialized (debug) code pays
    // for an allocation per byte there, which made the text and key checks most of a fuzzing run's time
    // under AddressSanitizer.

    /// Compares the bytes of `input` in `a` and `b` as `lexicographicallyPrecedes` and `elementsEqual`
    /// would: negative if `a` sorts first, zero if equal, positive if `b` sorts first.
    private static func compareBytes(_ input: [UInt8], _ a: Range<Int>, _ b: Range<Int>) -> Int {
        let bytes = input.span
        let common = Swift.min(a.count, b.count)
        var offset = 0
        while offset < common {
            let x = bytes[a.lowerBound + offset]
            let y = bytes[b.lowerBound + offset]
            if x != y { return x < y ? -1 : 1 }
            offset += 1
        }
        return a.count - b.count
    }

    private mutating func scanSimpleOrFloat(_ info: UInt8, headAt start: Int) throws -> CBOR {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: throw fail("the simple value undefined is not supported", at: start)
        case 24:
            let value = try readByte()
            if value < 32 {
                throw fail("simple value \(value) in two bytes is not well-formed", at: start)
            }
            throw fail("unassigned simple value \(value)", at: start)
        case 25:
            let bits = UInt16(truncatingIfNeeded: try readBigEndian(2, in: "a half float", headAt: start))
            let half = Float16(bitPattern: bits)
            if half.isNaN && bits != 0x7E00 {
                throw fail("non-canonical NaN (the only NaN allowed is f9 7e 00)", at: start)
            }
            return .float(Double(half))
        case 26:
            let bits = UInt32(truncatingIfNeeded: try readBigEndian(4, in: "a single float", headAt: start))
            let single = Float(bitPattern: bits)
            if single.isNaN { throw fail("non-canonical NaN (the only NaN allowed is f9 7e 00)", at: start) }
            if Float16(exactly: single) != nil {
                throw fail("non-shortest float: \(single) fits in a half float", at: start)
            }
            return .float(Double(single))
        case 27:
            let bits = try readBigEndian(8, in: "a double float", headAt: start)
            let double = Double(bitPattern: bits)
            if double.isNaN { throw fail("non-canonical NaN (the only NaN allowed is f9 7e 00)", at: start) }
            if Float(exactly: double) != nil {
                throw fail("non-shortest float: \(double) fits in a narrower float", at: start)
            }
            return .float(double)
        case 28...30:
            throw fail("reserved additional information \(info)", at: start)
        case 31:
            throw fail("unexpected break (ff) outside an indefinite length item", at: start)
        default:
            throw fail("unassigned simple value \(info)", at: start)
        }
    }
}
