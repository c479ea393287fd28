internal import Glibc

/// The lowest tier under every wrapper: asks the fault seam first (debug builds only), then runs the
/// call, retrying on EINTR, and turns -1 into the thread's errno.
@inline(__always)
func retryingOnInterrupt<R: BinaryInteger>(
    _ operation: SystemOperation?,
    _ body: () -> R
) throws(Errno) -> R {
    #if DEBUG
        if let operation, let injected = FaultInjection.fault(for: operation) {
            throw injected
        }
    #endif
    while true {
        let result = body()
        if result != -1 { return result }
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}

/// Like `retryingOnInterrupt` but for calls that must not be retried on EINTR because the kernel has
/// already released the resource (close(2) on Linux).
@inline(__always)
func notRetrying(_ operation: SystemOperation, _ body: () -> Int32) throws(Errno) {
    #if DEBUG
        if let injected = FaultInjection.fault(for: operation) {
            throw injected
        }
    #endif
    if body() == -1 {
        let error = Errno.current
        if error != .interrupted { throw error }
    }
}
