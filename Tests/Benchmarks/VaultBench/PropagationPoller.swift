import Foundation
import Synchronization
import Vault

/// B's long-lived handle reading one item in a loop on its own thread, until it reads the bytes it was
/// told to expect: then it notes when, and signals.
final class PropagationPoller: Sendable {
    let vault: Vault
    let key: ItemKey
    private let expected = Mutex<Data?>(nil)
    private let seenAt = Mutex<ContinuousClock.Instant?>(nil)
    private let problem = Mutex<String?>(nil)
    private let done = Atomic(false)
    private let seen = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)

    init(vault: Vault, key: ItemKey) {
        self.vault = vault
        self.key = key
    }

    /// The first failure of a read, if any.
    var failure: String? { problem.withLock { $0 } }

    func expect(_ value: Data) {
        seenAt.withLock { $0 = nil }
        expected.withLock { $0 = value }
    }

    /// When the expected bytes were read, or nil after `timeout` seconds.
    func wait(timeout: Double) -> ContinuousClock.Instant? {
        guard seen.wait(timeout: .now() + timeout) == .success else {
            expected.withLock { $0 = nil }
            return nil
        }
        return seenAt.withLock { $0 }
    }

    func poll() {
        defer { stopped.signal() }
        while !done.load(ordering: .relaxed) {
            if let target = expected.withLock({ $0 }) {
                do {
                    if try vault.data(for: key) == target {
                        let now = ContinuousClock.now
                        let claimed = expected.withLock { value in
                            guard value == target else { return false }
                            value = nil
                            return true
                        }
                        if claimed {
                            seenAt.withLock { $0 = now }
                            seen.signal()
                        }
                    }
                } catch {
                    problem.withLock { $0 = $0 ?? "\(error)" }
                }
            }
            usleep(500)
        }
    }

    func finish() {
        done.store(true, ordering: .relaxed)
        stopped.wait()
    }
}
