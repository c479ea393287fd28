import VaultCrypto
import VaultSystem

/// A place in a group's run of exchanges (`GroupCommit`): the run's epoch and the exchange's number
/// in it. Tickets of different epochs say nothing about each other.
struct CommitTicket: Equatable, Sendable {
    /// 16 random bytes, new for each run of the exchange counter.
    let epoch: [UInt8]
    let sequence: UInt64

    /// Whether a flush that covered `self` covers `other` too: the same run, no later in it.
    func covers(_ other: CommitTicket) -> Bool { epoch == other.epoch && sequence >= other.sequence }

    /// The next exchange's ticket in the same run.
    var successor: CommitTicket { CommitTicket(epoch: epoch, sequence: sequence &+ 1) }
}

/// One of group commit's two counters in a group's `.lock` (`GroupCommit`): the boot it was written
/// in (`/proc/sys/kernel/random/boot_id`), the ticket, and a check over both:
///
///     boot id (16) | epoch (16) | sequence (u64 big-endian) | FNV-1a 64 of the 40 bytes before (u64)
///
/// Never synced, and read by writers that may not hold the lock its writer held: so a record that is
/// torn, damaged or of another boot is no record, and the exchange counter then starts a new epoch
/// (a power cut can leave any older value of either counter on disk, or a process with another boot
/// id share the file; tickets of a new epoch are covered by no flush of an old one).
enum CommitCounter {
    static let byteCount = 48

    /// What is at a counter's place.
    enum Reading: Equatable {
        /// A ticket written in this boot.
        case ticket(CommitTicket)
        /// Nothing usable: never written, torn, damaged, of another boot, or at its last number.
        case absent
        /// The read itself failed: nothing is known.
        case unreadable
    }

    static func read(_ lockFile: FileDescriptor, at offset: Int64) -> Reading {
        let bytes: [UInt8]
        do {
            bytes = try lockFile.read(count: byteCount, at: offset)
        } catch {
            return .unreadable
        }
        guard let boot = BootIdentifier.current, bytes.count == byteCount, bytes[0..<16].elementsEqual(boot),
            UInt64(bigEndianBytes: bytes[40..<48]) == check(bytes[0..<40])
        else { return .absent }
        let sequence = UInt64(bigEndianBytes: bytes[32..<40])
        guard sequence < .max else { return .absent }
        return .ticket(CommitTicket(epoch: Array(bytes[16..<32]), sequence: sequence))
    }

    /// Writes `ticket` at `offset`, stamped with this boot; false when it could not be written.
    @discardableResult
    static func write(_ ticket: CommitTicket, to lockFile: FileDescriptor, at offset: Int64) -> Bool {
        guard let boot = BootIdentifier.current, ticket.epoch.count == 16 else { return false }
        var bytes = boot + ticket.epoch
        bytes.appendBigEndian(ticket.sequence)
        bytes.appendBigEndian(check(bytes[...]))
        return (try? lockFile.writeAll(bytes, at: offset)) != nil
    }

    /// A new epoch's first ticket; nil when no random bytes can be had.
    static func firstTicket() -> CommitTicket? {
        guard let epoch = try? SecureRandom.bytes(count: 16) else { return nil }
        return CommitTicket(epoch: epoch, sequence: 1)
    }

    /// FNV-1a, 64 bits: against torn and damaged records, not against anyone who writes them (a
    /// member who can write `.lock` can write any item of the group).
    static func check(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
