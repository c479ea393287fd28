import Testing

@testable import VaultCrypto

@Suite struct SecureAllocationTests {
    @Test func allocatesZeroedWritableMemory() throws {
        let count = 100
        let pointer = try SecureAllocation.allocate(byteCount: count)
        defer { SecureAllocation.free(pointer) }
        let bytes = UnsafeMutableRawBufferPointer(start: pointer, count: count)
        #expect(bytes.allSatisfy { $0 == 0 })
        for index in 0..<count { bytes[index] = UInt8(index) }
        #expect(Array(bytes) == (0..<count).map { UInt8($0) })
    }

    @Test func emptyAllocationIsAFreeablePointer() throws {
        let pointer = try SecureAllocation.allocate(byteCount: 0)
        SecureAllocation.free(pointer)
    }

    @Test func manyAllocationsAreDistinctAndIndependent() throws {
        let pointers = try (0..<8).map { _ in try SecureAllocation.allocate(byteCount: 32) }
        #expect(Set(pointers.map { UInt(bitPattern: $0) }).count == pointers.count)
        for (index, pointer) in pointers.enumerated() {
            pointer.initializeMemory(as: UInt8.self, repeating: UInt8(index), count: 32)
        }
        for (index, pointer) in pointers.enumerated() {
            #expect(UnsafeRawBufferPointer(start: pointer, count: 32).allSatisfy { $0 == UInt8(index) })
            SecureAllocation.free(pointer)
        }
    }

    @Test func negativeSizeIsAnInvalidArgument() {
        #expect(throws: CryptoError.self) { _ = try SecureAllocation.allocate(byteCount: -1) }
        do {
            _ = try SecureAllocation.allocate(byteCount: -1)
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    @Test func impossibleSizeIsAnAllocationFailure() {
        do {
            let pointer = try SecureAllocation.allocate(byteCount: Int.max / 2)
            SecureAllocation.free(pointer)
            Issue.record("an allocation of Int.max / 2 bytes succeeded")
        } catch {
            #expect(error.code == .allocationFailed)
        }
    }
}
