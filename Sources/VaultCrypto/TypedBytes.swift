extension Array where Element == UInt8 {
    /// `withUnsafeBytes` whose body keeps its error type (the standard library's only rethrows).
    @inlinable
    func withTypedBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { bytes in Result { () throws(E) in try body(bytes) } }
        return try result.get()
    }

    /// `withUnsafeMutableBytes` whose body keeps its error type.
    @inlinable
    mutating func withTypedMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R)
        throws(E) -> R
    {
        let result: Result<R, E> = withUnsafeMutableBytes { bytes in Result { () throws(E) in try body(bytes) } }
        return try result.get()
    }
}

extension ArraySlice where Element == UInt8 {
    /// `withUnsafeBytes` whose body keeps its error type (the standard library's only rethrows).
    @inlinable
    func withTypedBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { bytes in Result { () throws(E) in try body(bytes) } }
        return try result.get()
    }
}
