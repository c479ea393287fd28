internal import Glibc

/// The system's monotonic clock (`CLOCK_MONOTONIC`): one clock for every process of the machine, so
/// that times read in different processes can be compared (a benchmark's parallel writers).
package enum MonotonicClock {
    /// Nanoseconds since an unspecified point (the boot).
    package static func nanoseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}
