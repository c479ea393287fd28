internal import Glibc

extension FileDescriptor {
    /// Reads the rest of the file as `readAll(limit:)` does, for a secret: every buffer let go on the
    /// way (one outgrown, the read buffer) is wiped first, so that the returned array is the one copy of
    /// the bytes in memory (the caller wipes it).
    package func readAllWiping(limit: Int) throws(Errno) -> [UInt8] {
        func wipe(_ bytes: inout [UInt8]) {
            bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { explicit_bzero(base, $0.count) } }
        }
        var result: [UInt8] = []
        result.reserveCapacity(min(limit, 64 << 10))
        var chunk = [UInt8](repeating: 0, count: 4096)
        defer { wipe(&chunk) }
        while true {
            let n = try chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try read(into: buffer) }
            }.get()
            if n == 0 { return result }
            if result.count + n > limit {
                wipe(&result)
                throw Errno.fileTooLarge
            }
            if result.count + n > result.capacity {
                // Grown by hand: an append past the capacity would free the old buffer unwiped.
                var larger: [UInt8] = []
                larger.reserveCapacity(min(limit, max(2 * result.capacity, result.count + n)))
                larger += result
                wipe(&result)
                result = larger
            }
            result.append(contentsOf: chunk[0..<n])
        }
    }
}
