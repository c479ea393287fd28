/// The vault's files, records, counters and plaintexts hold their numbers most significant byte first:
/// these are the one place that writes and reads them (the archive's CBOR has its own, in VaultArchive).
extension [UInt8] {
    /// Appends `value` most significant byte first, in as many bytes as its type has.
    @inlinable package mutating func appendBigEndian<Integer: FixedWidthInteger>(_ value: Integer) {
        value.forEachBigEndianByte { append($0) }
    }
}

extension FixedWidthInteger {
    /// Hands `body` each byte of the number, most significant first, as many as its type has.
    @inlinable package func forEachBigEndianByte(_ body: (UInt8) -> Void) {
        var shift = Self.bitWidth
        while shift > 0 {
            shift -= 8
            body(UInt8(truncatingIfNeeded: self >> shift))
        }
    }

    /// The number that `bytes` hold most significant byte first (callers pass exactly the field).
    @inlinable package init(bigEndianBytes bytes: ArraySlice<UInt8>) {
        var value: Self = 0
        for index in bytes.indices { value = value << 8 | Self(bytes[index]) }
        self = value
    }
}
