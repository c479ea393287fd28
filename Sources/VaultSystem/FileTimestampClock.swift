internal import Glibc

/// The clock Linux file systems stamp change times with (`CLOCK_REALTIME_COARSE`: the wall clock as of
/// the last tick). A file whose change time is earlier than this clock read before the file was
/// looked at cannot be replaced later with an equal change time.
package enum FileTimestampClock {
    /// Nanoseconds since the epoch.
    package static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
