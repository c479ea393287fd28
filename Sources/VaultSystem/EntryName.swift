internal import Glibc

/// A directory entry's name of at most `capacity` bytes, assembled in place: for a name that a read
/// builds every time (an item's generation record), which as a `String` was an allocation and a copy
/// each time. A text with a NUL byte or a `/`, or more than fits, makes a name that every call refuses
/// (`EINVAL`, `ENAMETOOLONG`) rather than one the kernel would cut short or walk as a path; a refused
/// name stays refused.
@usableFromInline package struct EntryName: Sendable {
    /// The most bytes a name holds: one less than `bytes` has, so that a zero always follows the name.
    @usableFromInline package static let capacity = 127

    /// The bytes, then zeros: the byte after the last is the C string's terminator.
    @usableFromInline var bytes = InlineArray<128, UInt8>(repeating: 0)
    @usableFromInline var count = 0
    @usableFromInline var refusal: Errno?

    /// An empty name.
    @inlinable package init() {}

    /// Whether calls refuse this name.
    package var isRefused: Bool { refusal != nil }

    /// Appends the bytes of `text` but its last `dropped` (none when `dropped` is negative).
    @inlinable
    package mutating func append(_ text: String, droppingLast dropped: Int = 0) {
        let source = text.utf8.span
        let added = source.count - min(max(dropped, 0), source.count)
        guard refusal == nil, added <= Self.capacity - count else {
            refusal = refusal ?? .nameTooLong
            return
        }
        let start = count
        var target = bytes.mutableSpan
        target.withUnsafeMutableBufferPointer { target in
            source.withUnsafeBufferPointer { source in
                _ = UnsafeMutableBufferPointer(rebasing: target[start..<(start + added)])
                    .initialize(fromContentsOf: source[0..<added])
            }
        }
        count += added
        refuseUnlessEntryName(from: start)
    }

    /// Refuses the name (`EINVAL`) when the bytes from `start` on hold a NUL (the kernel would see a
    /// shorter name) or a `/` (it would walk a path).
    @usableFromInline
    mutating func refuseUnlessEntryName(from start: Int) {
        let end = count
        let clean = bytes.span.withUnsafeBytes { raw in
            let added = UnsafeRawBufferPointer(rebasing: raw[start..<end])
            guard let base = added.baseAddress else { return true }
            return memchr(base, 0, added.count) == nil && memchr(base, 0x2f, added.count) == nil
        }
        if !clean { refusal = .invalidArgument }
    }

    /// Hands `body` the name as a C string; throws the refusal of a name that cannot be one.
    func withCString<R>(_ body: (UnsafePointer<CChar>) throws(Errno) -> R) throws(Errno) -> R {
        if let refusal { throw refusal }
        return try bytes.span.withUnsafeBufferPointer { (buffer) throws(Errno) in
            try buffer.withMemoryRebound(to: CChar.self) { (text) throws(Errno) in try body(text.baseAddress!) }
        }
    }
}
