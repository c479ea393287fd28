internal import CVaultSystem
internal import Glibc

/// A POSIX thread that runs one closure and is never joined: for work that blocks for as long as it
/// lasts (an etcd watch's stream), which a Dispatch queue's bounded pool of workers should not hold.
package enum DetachedThread {
    /// Starts a thread named `name` (at most 15 bytes are kept) that runs `body`.
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) throws(Errno) {
        #if DEBUG
            if let injected = FaultInjection.fault(for: .startThread) { throw injected }
        #endif
        final class Work {
            let name: String
            let body: @Sendable () -> Void
            init(_ name: String, _ body: @escaping @Sendable () -> Void) {
                self.name = name
                self.body = body
            }
        }
        let work = Unmanaged.passRetained(Work(name, body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        var thread = pthread_t()
        let status = pthread_create(
            &thread, &attributes,
            { context in
                let work = Unmanaged<Work>.fromOpaque(context!).takeRetainedValue()
                _ = vsys_name_this_thread(work.name)
                work.body()
                return nil
            }, work)
        guard status == 0 else {
            Unmanaged<Work>.fromOpaque(work).release()
            throw Errno(rawValue: status)
        }
    }
}
