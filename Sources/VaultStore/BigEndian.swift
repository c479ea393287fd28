extension [UInt8] {
    /// Appends `value` as 8 bytes, most significant first (as the vault's records and counters hold
    /// their numbers).
    mutating func appendBigEndian(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { append(UInt8((value >> UInt64(shift)) & 0xff)) }
    }
}
