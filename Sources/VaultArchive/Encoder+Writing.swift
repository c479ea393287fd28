import FoundationEssentials

extension CBORWriter {
    /// Writes `date` as the archive writes a `Date` (tag 1 around its seconds since 1970); false, with
    /// nothing written, for a date the archive refuses (not finite, or not held exactly by `Date`).
    package mutating func writeDate(_ date: Date) -> Bool {
        guard let content = try? ArchiveEncoder.dateContent(date, path: []) else { return false }
        writeHead(6, CBORTag.epochDate)
        write(content)
        return true
    }

    mutating func write(_ node: EncodeNode) {
        switch node {
        case .value(let item):
            write(item)
        case .array(let array):
            enter()
            defer { depth -= 1 }
            writeHead(4, UInt64(array.items.count))
            for item in array.items { write(item) }
        case .map(let map):
            enter()
            defer { depth -= 1 }
            writeMap(map)
        case .deferred(let encoder):
            write(encoder.node ?? .map(EncodeMap()))
        }
    }

    private mutating func writeMap(_ map: EncodeMap) {
        let entries = map.entries
        if entries.count <= 1 {
            writeHead(5, UInt64(entries.count))
            if let entry = entries.first {
                writeKey(entry.key)
                write(entry.value)
            }
            return
        }
        // Stable order by key, then keep the last value written for a key (a key encoded twice overwrites);
        // keys are the same only if their bytes are.
        let order = entries.indices.sorted { a, b in
            let c = EncodeKey.compare(entries[a].key, entries[b].key)
            return c != 0 ? c < 0 : a < b
        }
        var kept: [Int] = []
        kept.reserveCapacity(order.count)
        for index in order {
            if let last = kept.last, EncodeKey.compare(entries[last].key, entries[index].key) == 0 {
                kept[kept.count - 1] = index
            } else {
                kept.append(index)
            }
        }
        writeHead(5, UInt64(kept.count))
        for index in kept {
            writeKey(entries[index].key)
            write(entries[index].value)
        }
    }

    @inline(__always)
    private mutating func writeKey(_ key: EncodeKey) {
        switch key {
        case .text(let s): writeText(s)
        case .int(let i): writeInt(Int64(i))
        }
    }
}
