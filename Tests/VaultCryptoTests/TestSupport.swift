import Foundation

/// Hex helpers and vector loading for the crypto tests.
enum Hex {
    static func decode(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            bytes.append(UInt8(nibble(high) << 4 | nibble(low)))
        }
        return bytes
    }

    private static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return 0
        }
    }

    static func encode(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

enum Vectors {
    static func url(_ name: String, filePath: String = #filePath) -> URL {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Vectors/\(name)")
    }

    static func load<T: Decodable>(_ type: T.Type, _ name: String) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(contentsOf: url(name)))
    }
}

/// The memory-map entry of /proc/self/smaps that contains `address`.
struct MemoryMapping {
    let lockedKilobytes: Int
    let flags: [String]

    static func containing(_ address: UInt) throws -> MemoryMapping? {
        // /proc files report size 0, so read them to the end rather than by their size.
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/smaps") else { return nil }
        defer { try? handle.close() }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        var inside = false
        var locked = 0
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let range = fields.first, range.contains("-"), !range.hasSuffix(":") {
                let bounds = range.split(separator: "-").compactMap { UInt($0, radix: 16) }
                inside = bounds.count == 2 && bounds[0] <= address && address < bounds[1]
                continue
            }
            guard inside else { continue }
            if fields.first == "Locked:" { locked = Int(fields[1]) ?? 0 }
            if fields.first == "VmFlags:" {
                return MemoryMapping(lockedKilobytes: locked, flags: fields.dropFirst().map(String.init))
            }
        }
        return nil
    }
}
