import FoundationEssentials

/// Writes CBOR items in the core deterministic encoding of RFC 8949 §4.2.1.
package struct CBORWriter {
    /// The bytes written so far.
    package var bytes: [UInt8]
    /// The number of arrays, maps and tags enclosing the item being written.
    package var depth = 0
    /// The deepest nesting the decoder will accept; writing deeper sets `exceededDepth`.
    package var maxDepth = Int.max
    /// Whether an array, map or tag was written at a depth of `maxDepth` or more.
    package var exceededDepth = false

    /// Notes one more level of nesting (an array, map or tag) about to be written.
    @inline(__always)
    package mutating func enter() {
        if depth >= maxDepth { exceededDepth = true }
        depth += 1
    }

    /// Creates a writer with some reserved capacity.
    package init(capacity: Int = 64) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// The archive envelope: tag 55799 (`d9 d9 f7`), an array of two items (`82`), format version 1 (`01`).
    package static let envelope: [UInt8] = [0xD9, 0xD9, 0xF7, 0x82, 0x01]

    /// Writes a head with the shortest argument encoding.
    @inline(__always)
    package mutating func writeHead(_ major: UInt8, _ argument: UInt64) {
        let m = major << 5
        if argument < 24 {
            bytes.append(m | UInt8(truncatingIfNeeded: argument))
        } else if argument <= 0xFF {
            bytes.append(m | 24)
            bytes.append(UInt8(truncatingIfNeeded: argument))
        } else if argument <= 0xFFFF {
            bytes.append(m | 25)
            bytes.append(UInt8(truncatingIfNeeded: argument >> 8))
            bytes.append(UInt8(truncatingIfNeeded: argument))
        } else if argument <= 0xFFFF_FFFF {
            bytes.append(m | 26)
            for shift in stride(from: 24, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift)))
            }
        } else {
            bytes.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift)))
            }
        }
    }

    /// Writes a signed integer as major type 0 or 1.
    @inline(__always)
    package mutating func writeInt(_ value: Int64) {
        if value >= 0 {
            writeHead(0, UInt64(value))
        } else {
            writeHead(1, UInt64(bitPattern: -1 - value))
        }
    }

    /// Writes a text string.
    @inline(__always)
    package mutating func writeText(_ value: String) {
        let utf8 = value.utf8
        writeHead(3, UInt64(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// Writes a byte string.
    package mutating func writeBytes(_ value: Data) {
        writeHead(2, UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// Writes a float in the shortest width that holds it exactly; every NaN is written as `f9 7e 00`.
    package mutating func writeFloat(_ value: Double) {
        if value.isNaN {
            bytes.append(contentsOf: [0xF9, 0x7E, 0x00])
        } else if let half = Float16(exactly: value) {
            let bits = half.bitPattern
            bytes.append(0xF9)
            bytes.append(UInt8(truncatingIfNeeded: bits >> 8))
            bytes.append(UInt8(truncatingIfNeeded: bits))
        } else if let single = Float(exactly: value) {
            let bits = single.bitPattern
            bytes.append(0xFA)
            for shift in stride(from: 24, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift)))
            }
        } else {
            let bits = value.bitPattern
            bytes.append(0xFB)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
            }
        }
    }

    /// Writes a complete item; map entries are sorted by their encoded keys.
    package mutating func write(_ item: CBOR) {
        switch item {
        case .unsigned(let v): writeHead(0, v)
        case .negative(let v): writeHead(1, v)
        case .bytes(let b):
            writeHead(2, UInt64(b.count))
            bytes.append(contentsOf: b)
        case .text(let s): writeText(s)
        case .array(let items):
            enter()
            defer { depth -= 1 }
            writeHead(4, UInt64(items.count))
            for element in items { write(element) }
        case .map(let entries):
            enter()
            defer { depth -= 1 }
            writeHead(5, UInt64(entries.count))
            var encoded: [(key: [UInt8], value: CBOR)] = []
            encoded.reserveCapacity(entries.count)
            for entry in entries {
                var keyWriter = CBORWriter(capacity: 16)
                keyWriter.write(entry.key)
                encoded.append((keyWriter.bytes, entry.value))
            }
            encoded.sort { $0.key.lexicographicallyPrecedes($1.key) }
            for entry in encoded {
                bytes.append(contentsOf: entry.key)
                write(entry.value)
            }
        case .tagged(let tag, let content):
            enter()
            defer { depth -= 1 }
            writeHead(6, tag)
            write(content)
        case .bool(let b): bytes.append(b ? 0xF5 : 0xF4)
        case .null: bytes.append(0xF6)
        case .float(let d): writeFloat(d)
        }
    }
}
