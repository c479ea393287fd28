import Dispatch
import FoundationEssentials
import Synchronization
import VaultSystem

/// A change a watch reports.
public enum EtcdEvent: Sendable, Equatable {
    /// `keyValue` was written (created or changed).
    case put(EtcdKeyValue)
    /// `key` was deleted at revision `modRevision`.
    case delete(key: [UInt8], modRevision: Int64)
}

/// Why a watch ended.
public enum EtcdWatchEnd: Sendable, Equatable {
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
public final class EtcdWatch: Sendable {
    private let cancelled = Atomic(false)
    private let ended = Mutex<EtcdWatchEnd?>(nil)

    /// Starts watching `prefix` on `client`'s cluster from `revision` (0: from now); `onStart` runs
    /// once etcd has made the watch, `onEvents` gets each batch and the revision after it, `onEnd` runs
    /// once, when the watch ends (on another thread, never from within this initializer).
    public init(
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
    public func cancel() {
        cancelled.store(true, ordering: .sequentiallyConsistent)
    }

    /// How the watch ended, or nil while it runs.
    public var end: EtcdWatchEnd? { ended.withLock { $0 } }

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
        var verdict: EtcdWatchEnd?
        let (status, failure) = transport.stream(target.endpoint + "/v3/watch", body: body, options: target.options) {
            chunk in
            if cancelled.load(ordering: .sequentiallyConsistent) {
                verdict = .cancelled
                return false
            }
            guard let chunk else { return true }
            pending += chunk
            // The gateway sends one JSON object per line.
            while let newline = pending.firstIndex(of: 10) {
                let line = Array(pending[..<newline])
                pending.removeSubrange(...newline)
                guard !line.isEmpty else { continue }
                switch Self.decode(line) {
                case .events(let events, let revision):
                    if !events.isEmpty { onEvents(events, revision) }
                case .end(let end):
                    verdict = end
                    return false
                case .created:
                    onStart()
                case .other:
                    continue
                }
            }
            return true
        }
        if let verdict { return verdict }
        if let failure { return .failed("the watch on \(target.endpoint) ended: \(failure.message)") }
        return .failed("the watch on \(target.endpoint) ended (HTTP \(status))")
    }

    private enum Message {
        case events([EtcdEvent], Int64)
        case end(EtcdWatchEnd)
        case created
        case other
    }

    private static func decode(_ line: [UInt8]) -> Message {
        guard let object = JSONValue.parse(line), object.isObject else {
            return .end(.failed("etcd's watch sent something that is not JSON (\(line.count) bytes)"))
        }
        if let error = object["error"], error.isObject {
            return .end(.failed("etcd ended the watch: \(error["message"]?.string ?? "an error")"))
        }
        guard let result = object["result"], result.isObject else { return .other }
        let compacted = (try? EtcdJSON.integer(result, "compact_revision")) ?? 0
        if compacted > 0 { return .end(.compacted(compactRevision: compacted)) }
        if result["canceled"]?.bool == true {
            return .end(.failed("etcd cancelled the watch: \(result["cancel_reason"]?.string ?? "no reason given")"))
        }
        guard let header = try? EtcdJSON.header(result) else { return .other }
        if result["created"]?.bool == true { return .created }
        var events: [EtcdEvent] = []
        for event in result["events"]?.array ?? [] {
            guard let kv = event["kv"], kv.isObject, let key = try? EtcdJSON.bytes(kv, "key") else { continue }
            if event["type"]?.string == "DELETE" {
                events.append(.delete(key: key, modRevision: (try? EtcdJSON.integer(kv, "mod_revision")) ?? 0))
            } else if let value = try? EtcdJSON.bytes(kv, "value") {
                events.append(
                    .put(
                        EtcdKeyValue(
                            key: key, value: value, createRevision: (try? EtcdJSON.integer(kv, "create_revision")) ?? 0,
                            modRevision: (try? EtcdJSON.integer(kv, "mod_revision")) ?? 0,
                            version: (try? EtcdJSON.integer(kv, "version")) ?? 0)))
            }
        }
        return .events(events, header.revision)
    }
}
