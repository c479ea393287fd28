import Glibc
import Testing

@testable import VaultCrypto

/// Small `SecureBytes` as parts of a shared page (`SecureSlab`): they share it, each is wiped when it
/// goes while its neighbours keep their bytes, and parts made and dropped from several threads never
/// overlap.
@Suite struct SecureSlabTests {
    /// The address of `bytes`, for comparing places (never read through).
    private func address(_ bytes: SecureBytes) -> UInt {
        bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
    }

    /// The page of `bytes`: a slab is one page, so parts of one slab share it.
    private func page(_ bytes: SecureBytes) -> UInt { address(bytes) >> 12 }

    /// `count` bytes at `address` as the kernel has them (`/proc/self/mem`), or nil when nothing is
    /// mapped there any more: the tests run beside others that take parts of the same slabs, so a
    /// part's slab may have been freed (and wiped) by the time it is looked at.
    private func memory(at address: UnsafeRawPointer, count: Int) -> [UInt8]? {
        let fd = open("/proc/self/mem", O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0xEE, count: count)
        let read = bytes.withUnsafeMutableBytes {
            pread(fd, $0.baseAddress, count, off_t(Int(bitPattern: address)))
        }
        return read == count ? bytes : nil
    }

    @Test func smallBuffersShareAPageAndLargeOnesDoNot() throws {
        // Other tests take parts of the same slabs meanwhile, so a slab may fill between two of these:
        // 64 buffers of their own pages would be no sharing at all.
        let small = try (0..<64).map { _ in try SecureBytes.random(count: 32) }
        #expect(Set(small.map(page)).count <= 8, "pages: \(Set(small.map(page)).count)")
        #expect(small.allSatisfy { address($0) % UInt(SecureSlab.alignment) == 0 })
        let large = try SecureBytes.random(count: SecureSlab.largestPart + 1)
        #expect(large.count == SecureSlab.largestPart + 1)
    }

    @Test func aPartIsWipedWhenItGoesAndItsNeighboursKeepTheirBytes() throws {
        let before = try SecureBytes(copying: [UInt8](repeating: 0xAA, count: 48))
        var dropped: SecureBytes? = try SecureBytes(copying: [UInt8](repeating: 0x5C, count: 40))
        let after = try SecureBytes(copying: [UInt8](repeating: 0xBB, count: 48))
        let place = dropped!.withUnsafeBytes { UnsafeRawPointer($0.baseAddress!) }
        #expect(memory(at: place, count: 40) == [UInt8](repeating: 0x5C, count: 40), "the control")
        dropped = nil
        // Zeros, or (its slab freed when it was the slab's last part) nothing mapped there at all.
        if let left = memory(at: place, count: 40) { #expect(left.allSatisfy { $0 == 0 }) }
        #expect(before.constantTimeEquals([UInt8](repeating: 0xAA, count: 48)))
        #expect(after.constantTimeEquals([UInt8](repeating: 0xBB, count: 48)))
    }

    @Test func aFailedFillingGivesItsPartBackWiped() throws {
        struct Refused: Error {}
        let neighbour = try SecureBytes(copying: [UInt8](repeating: 7, count: 16))
        var place: UnsafeRawPointer?
        #expect(throws: SecureFillError<Refused>.self) {
            _ = try SecureBytes(exactly: 24) { (buffer) throws(Refused) in
                buffer.initializeMemory(as: UInt8.self, repeating: 0x33)
                place = UnsafeRawPointer(buffer.baseAddress!)
                throw Refused()
            }
        }
        if let left = memory(at: place!, count: 24) { #expect(left.allSatisfy { $0 == 0 }) }
        #expect(neighbour.constantTimeEquals([UInt8](repeating: 7, count: 16)))
        #expect(try SecureBytes.random(count: 24).count == 24)  // the page is usable after the failure
    }

    @Test func partsFromSeveralThreadsNeverOverlap() async throws {
        let failures = await withTaskGroup(of: Int.self) { tasks in
            for thread in 0..<4 {
                tasks.addTask {
                    var failures = 0
                    var kept: [(SecureBytes, UInt8)] = []
                    for round in 0..<3_000 {
                        let size = 1 + (round * 37 + thread * 101) % (SecureSlab.largestPart + 200)
                        let fill = UInt8(truncatingIfNeeded: thread * 64 + round)
                        guard let bytes = try? SecureBytes(copying: [UInt8](repeating: fill, count: size)) else {
                            failures += 1
                            continue
                        }
                        kept.append((bytes, fill))
                        if kept.count > 24 {
                            let (old, value) = kept.removeFirst()
                            if !old.withUnsafeBytes({ $0.allSatisfy { $0 == value } }) {
                                failures += 1
                            }
                        }
                    }
                    for (bytes, value) in kept where !bytes.withUnsafeBytes({ $0.allSatisfy { $0 == value } }) {
                        failures += 1
                    }
                    return failures
                }
            }
            return await tasks.reduce(0, +)
        }
        #expect(failures == 0)
    }
}
