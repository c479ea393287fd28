import Dispatch
import FoundationEssentials
import Synchronization
import VaultSystem

/// A change a watch reports.
package enum EtcdEvent: Sendable, Equatable {
    /// `keyValue` was written (created or changed).
    case put(EtcdKeyValue)
    /// `key` was deleted at revision `modRevision`.
    case delete(key: [UInt8], modRevision: Int64)
}

/// Why a watch ended.
package enum EtcdWatchEnd: Sendable, Equatable {
    /// `cancel()` was called.
    case cancelled
    /// The revision it was to start from (or resume at) was compacted away: range again, then watch
    /// from after the range's revision.
    case compacted(compactRevision: Int64)
    /// The connection ended or etcd cancelled the watch (a member died, a restart): range and watch
    /// again, on another endpoint if need be.
    case failed(String)
}

/// A watch of every key under a prefix, from a revision on (`/v3/watch`), on a thread of its own with
/// a connection of its own. Events come in revision order, in batches with the store's revision after
/// them. A watch alone is not to be trusted for freshness (etcd 3.4.23 has bugs that drop events):
/// its user also checks the revision it needs now and then.
package final class EtcdWatch: Sendable {
    private let cancelled = Atomic(false)
    private let ended = Mutex<EtcdWatchEnd?>(nil)

    /// Starts watching `prefix` on `client`'s cluster from `revision` (0: from now); `onStart` runs
    /// once etcd has made the watch, `onEvents` gets each batch and the revision after it, `onEnd` runs
    /// once, when the watch ends (on another thread, never from within this initializer).
    package init(
        client: EtcdClient, prefix: [UInt8], fromRevision revision: Int64,
        onStart: @escaping @Sendable () -> Void = {},
        onEvents: @escaping @Sendable ([EtcdEvent], Int64) -> Void,
        onEnd: @escaping @Sendable (EtcdWatchEnd) -> Void
    ) {
        let request: JSONValue = [
            "create_request": [
                "key": .string(EtcdJSON.base64(prefix)),
                "range_end": .string(EtcdJSON.base64(EtcdJSON.prefixEnd(prefix))),
                "start_revision": .string(String(revision)),
            ]
        ]
        let body = (try? request.serialized()) ?? []
        do {
            try DetachedThread.start(named: "etcd watch") { [self] in
                let end = run(client: client, body: body, onStart: onStart, onEvents: onEvents)
                ended.withLock { $0 = end }
                onEnd(end)
            }
        } catch {
            // Not from here: the caller may hold the lock that its `onEnd` takes.
            let end = EtcdWatchEnd.failed("cannot start the watch's thread: \(error)")
            ended.withLock { $0 = end }
            DispatchQueue.global().async { onEnd(end) }
        }
    }

    /// Ends the watch (within about a second); `onEnd` then gets `.cancelled`.
    package func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
    }

    /// How the watch ended, or nil while it runs.
    package var end: EtcdWatchEnd? { ended.withLock { $0 } }

    private func run(
        client: EtcdClient, body: [UInt8], onStart: @Sendable () -> Void,
        onEvents: @Sendable ([EtcdEvent], Int64) -> Void
    ) -> EtcdWatchEnd {
        guard let transport = HTTPTransport() else { return .failed(HTTPTransport.unavailableReason) }
        let target: (endpoint: String, options: TransportOptions)
        do {
            target = try client.streamTarget()
        } catch {
            return .failed(error.message)
        }
        var pending: [UInt8] = []
        var scanned = 0  // bytes at the start of `pending` known to hold no newline
        var verdict: EtcdWatchEnd?
        let (status, failure) = transport.stream(target.endpoint + "/v3/watch", body: body, options: target.options) {
            chunk in
            if cancelled.load(ordering: .sequentiallyConsistent) {
                verdict = .cancelled
                return false
            }
            guard let chunk else { return true }
            pending += chunk
            // The gateway sends one JSON object per line. Each byte is looked at once.
            while let newline = pending[scanned...].firstIndex(of: 10) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                scanned = 0
                guard !line.isEmpty else { continue }
                switch Self.decode(line) {
                case .events(let events, let revision):
                    if !events.isEmpty { onEvents(events, revision) }
                case .end(.failed(let message)):
                    verdict = .failed("etcd at \(target.endpoint): \(message)")
                    return false
                case .end(let end):
                    verdict = end
                    return false
                case .created:
                    onStart()
                }
            }
            scanned = pending.count
            guard pending.count <= Self.maximumLineByteCount else {
                verdict = .failed(
                    "etcd at \(target.endpoint) sent a watch line of more than \(Self.maximumLineByteCount) bytes")
                return false
            }
            return true
        }
        if let verdict { return verdict }
        if let failure { return .failed("the watch on \(target.endpoint) ended: \(failure.message)") }
        return .failed("the watch on \(target.endpoint) ended (HTTP \(status))")
    }

    /// The longest line of the watch's stream taken (as the largest answer to a request).
    static let maximumLineByteCount = 64 << 20

    enum Message: Equatable {
        case events([EtcdEvent], Int64)
        case end(EtcdWatchEnd)
        case created
    }

    /// One line of the watch's stream. A line that etcd could not have sent ends the watch (its owner
    /// then reads the range again) rather than being skipped: a skipped event is a change the owner
    /// would never see.
    static func decode(_ line: [UInt8]) -> Message {
        guard let object = JSONValue.parse(line), object.isObject else {
            return .end(.failed("etcd's watch sent something that is not JSON (\(line.count) bytes)"))
        }
        do throws(EtcdError) {
            if let error = try EtcdJSON.object(object, "error") {
                return .end(.failed("etcd ended the watch: \(error["message"]?.string ?? "an error")"))
            }
            guard let result = try EtcdJSON.object(object, "result") else {
                throw EtcdError(.malformedResponse, "etcd sent a line with neither a result nor an error")
            }
            let compacted = try EtcdJSON.integer(result, "compact_revision")
            if compacted > 0 { return .end(.compacted(compactRevision: compacted)) }
            if try EtcdJSON.flag(result, "canceled") {
                let reason = try EtcdJSON.text(result, "cancel_reason")
                return .end(.failed("etcd cancelled the watch: \(reason.isEmpty ? "no reason given" : reason)"))
            }
            if try EtcdJSON.flag(result, "created") { return .created }
            var events: [EtcdEvent] = []
            for event in try EtcdJSON.objects(result, "events") {
                guard let kv = try EtcdJSON.object(event, "kv") else {
                    throw EtcdError(.malformedResponse, "etcd sent an event without a kv")
                }
                // proto3 leaves out the default, PUT.
                switch try EtcdJSON.text(event, "type") {
                case "", "PUT": events.append(.put(try EtcdJSON.keyValue(kv, in: "events")))
                case "DELETE":
                    let keyValue = try EtcdJSON.keyValue(kv, in: "events", deleted: true)
                    events.append(.delete(key: keyValue.key, modRevision: keyValue.modRevision))
                case let other: throw EtcdError(.malformedResponse, "etcd sent an event of type \(other)")
                }
            }
            // A line without events (progress) is dropped, and etcd's grpc-proxy makes up the created line
            // of a watch from "now" with revision 0: only events need the revision they bring the store to.
            guard !events.isEmpty else { return .events([], 0) }
            return .events(events, try EtcdJSON.header(result).revision)
        } catch {
            return .end(.failed("etcd's watch sent a malformed message: \(error.message)"))
        }
    }
}
