/// The kernel's identifier of the current boot (`/proc/sys/kernel/random/boot_id`, a random UUID made
/// at each boot): what tells a counter that a process of this boot wrote from one that survived a
/// reboot on disk (`GroupCommit`'s counters in `.lock`, which are never synced).
package enum BootIdentifier {
    /// The 16 bytes of this boot's identifier; nil when the kernel does not give it (no `/proc`).
    package static let current: [UInt8]? = read()

    private static func read() -> [UInt8]? {
        guard
            let file = try? FileDescriptor.currentWorkingDirectory.openAt(
                "/proc/sys/kernel/random/boot_id", [.readOnly])
        else { return nil }
        defer { try? file.close() }
        guard let text = try? file.read(upTo: 64) else { return nil }
        let digits = text.compactMap(hexValue)
        guard digits.count == 32 else { return nil }
        return stride(from: 0, to: 32, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
