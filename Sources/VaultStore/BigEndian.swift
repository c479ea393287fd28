/// The vault's files, records, counters and plaintexts hold their numbers most significant byte first:
/// these are the one place that writes and reads them (the archive's CBOR has its own, in VaultArchive).
extension [UInt8] {
    /// Appends `value` most significant byte first, in as many bytes as its type has.
    @inlinable package mutating func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        var shift = Integer.bitWidth
        while shift > 0 {
            shift -= 8
            append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }
}

extension FixedWidthInteger {
    /// The number that `bytes` hold most significant byte first (callers pass exactly the field).
    @inlinable package init(bigEndianBytes bytes: ArraySlice<UInt8>) {
        var value: Self = 0
        for index in bytes.indices { value = value << 8 | Self(bytes[index]) }
        self = value
    }
}
