import FoundationEssentials
import Synchronization
import VaultCrypto
import VaultSystem

/// A client of an etcd 3.4 cluster through its JSON gateway (`POST /v3/kv/range`, `/v3/kv/txn`, …),
/// over libcurl (which, unlike Foundation's URLSession on Linux, can present a client certificate).
///
/// Requests go to one endpoint at a time, starting with the last that answered. A read, or a write
/// that cannot have been sent (no connection), moves on to the next endpoint when one fails or has no
/// leader; a write whose outcome is unknown (a timeout after it went out) is `outcomeUnknown`, never
/// sent twice. With `user` and a password, the client authenticates first and again when etcd says
/// its token is no longer valid (tokens expire, and die when a member restarts).
package final class EtcdClient: Sendable {
    /// Where the cluster is and how to reach it.
    package struct Configuration: Sendable {
        /// `http://host:port` or `https://host:port`, tried in turn.
        package var endpoints: [String]
        /// A CA certificate file to verify the members' certificates with (https).
        package var caFile: String?
        /// A client certificate and its key (PEM files), for members that ask for one.
        package var certificateFile: String?
        /// The private key of `certificateFile`.
        package var keyFile: String?
        /// etcd's own authentication: a user name and its password.
        package var user: String?
        /// The password of `user`.
        package var password: SecureBytes?
        /// The time one request to one endpoint may take (a read without a leader blocks until then).
        package var requestTimeoutMilliseconds = 2000
        /// The time a connection to one endpoint may take.
        package var connectTimeoutMilliseconds = 500
        /// The time a read may take in all, over every endpoint it tries (each gets a share of what is
        /// left); a read's caller answers from its cache after it.
        package var readDeadlineMilliseconds = 1000
        /// The largest answer the client takes (a larger one is `responseTooLarge`).
        package var maximumAnswerByteCount = TransportOptions.defaultMaximumBodyByteCount

        /// A configuration for `endpoints`; refused when one is not an http or https URL with a host.
        package init(endpoints: [String]) throws(EtcdError) {
            guard !endpoints.isEmpty else { throw EtcdError(.invalidRequest, "no etcd endpoint was given") }
            for endpoint in endpoints {
                guard let url = URL(string: endpoint), ["http", "https"].contains(url.scheme ?? ""),
                    url.host?.isEmpty == false, url.path.isEmpty || url.path == "/", url.query == nil
                else {
                    throw EtcdError(
                        .invalidRequest,
                        "\(endpoint) is not an etcd endpoint: give http://HOST:PORT or https://HOST:PORT")
                }
            }
            self.endpoints = endpoints.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        }
    }

    struct State {
        /// Transports no request is using, made by process `processID`.
        var idle: [HTTPTransport] = []
        var preferred = 0
        var token: String?
        /// The process that made `idle`: a forked child makes its own (it must never share the parent's
        /// connections, where each could read the other's answers).
        var processID: Int32 = 0
    }

    /// Where the cluster is and how to reach it.
    package let configuration: Configuration
    let state = Mutex(State())
    /// Called after each page that `range(prefix:pageSize:maximumPageSize:maximumKeys:)` reads, with its number from 1 (tests
    /// compact etcd there).
    let afterPage = Mutex<(@Sendable (Int) -> Void)?>(nil)

    /// A client of the cluster `configuration` names; nothing is sent until the first request.
    package init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    // MARK: Key-value calls

    /// The value of `key`, or of every key in [`key`, `rangeEnd`); linearizable unless `serializable`
    /// (then any member answers from its own state, even without a leader).
    /// At `revision` when it is not 0 (the state etcd had then, unless it compacted past it).
    package func range(
        _ key: [UInt8], rangeEnd: [UInt8]? = nil, serializable: Bool = false, keysOnly: Bool = false,
        revision: Int64 = 0
    ) throws(EtcdError) -> EtcdRangeResult {
        try call(
            "/v3/kv/range",
            EtcdJSON.rangeRequest(
                key, rangeEnd: rangeEnd, serializable: serializable, keysOnly: keysOnly, revision: revision),
            idempotent: true
        ) { answer throws(EtcdError) in try EtcdJSON.rangeResult(answer, header: try EtcdJSON.header(answer)) }
    }

    /// The end of the range of every key that starts with `prefix` (for a range or a deletion).
    package static func rangeEnd(ofPrefix prefix: [UInt8]) -> [UInt8] { EtcdJSON.prefixEnd(prefix) }

    /// Every key that starts with `prefix`.
    package func range(prefix: [UInt8], serializable: Bool = false, keysOnly: Bool = false) throws(EtcdError)
        -> EtcdRangeResult
    {
        try range(prefix, rangeEnd: EtcdJSON.prefixEnd(prefix), serializable: serializable, keysOnly: keysOnly)
    }

    /// Every key that starts with `prefix`, read in pages of at most `pageSize` keys (so that no one
    /// response grows with the range): the first page linearizable, the others at its revision, so
    /// that together they are one consistent view. With a larger `maximumPageSize`, each later page
    /// takes twice as many keys as the one before, as far as `pageValueBytes` holds at the largest value
    /// read so far (at least 1 KiB), up to that size: a round trip costs more than a small key, and a
    /// range of small values is read in few. A page that grew and failed (an answer larger than the
    /// client takes, or too slow) is read again at `pageSize`, and no page grows after it. When etcd compacts past that revision between two pages, the read starts
    /// again at a new revision (three times at most, then `rejected`). More than `maximumKeys` keys
    /// under the prefix is refused as an answer no caller can use (an endpoint that says "more" for
    /// ever, or keys nobody should have put there).
    package func range(prefix: [UInt8], pageSize: Int, maximumPageSize: Int? = nil, maximumKeys: Int = .max)
        throws(EtcdError) -> EtcdRangeResult
    {
        var attempt = 1
        while true {
            do {
                return try pagedRange(
                    prefix: prefix, pageSize: pageSize, maximumPageSize: max(pageSize, maximumPageSize ?? pageSize),
                    maximumKeys: maximumKeys)
            } catch  where error.grpcCode == Self.outOfRange && attempt < 3 {
                attempt += 1
            }
        }
    }

    /// gRPC's OUT_OF_RANGE: what etcd answers a read at a revision it has compacted.
    package static let outOfRange = 11

    /// The bytes of values a page that grows is sized for (`range(prefix:pageSize:maximumPageSize:maximumKeys:)`).
    package static let pageValueBytes = 4 << 20

    /// One attempt of `range(prefix:pageSize:maximumPageSize:maximumKeys:)`.
    private func pagedRange(prefix: [UInt8], pageSize: Int, maximumPageSize: Int, maximumKeys: Int) throws(EtcdError)
        -> EtcdRangeResult
    {
        let end = EtcdJSON.prefixEnd(prefix)
        var start = prefix
        var revision: Int64 = 0
        var keyValues: [EtcdKeyValue] = []
        var clusterID = ""
        var pages = 0
        var limit = pageSize
        var largestValue = 1 << 10
        var growing = maximumPageSize > pageSize
        while true {
            let page: EtcdRangeResult
            let more: Bool
            do {
                (page, more) = try call(
                    "/v3/kv/range", EtcdJSON.rangeRequest(start, rangeEnd: end, limit: limit, revision: revision),
                    // The first page waits at most the read deadline (with etcd out of reach, the caller answers
                    // from its cache after it); the others follow a page etcd answered.
                    idempotent: true, bulk: pages > 0
                ) { answer throws(EtcdError) in
                    let page = try EtcdJSON.rangeResult(answer, header: try EtcdJSON.header(answer))
                    let more = try EtcdJSON.flag(answer, "more")
                    if more, page.keyValues.isEmpty {
                        throw EtcdError(.malformedResponse, "etcd said more keys follow a page that had none")
                    }
                    // Each page starts at or after `start` (so the next one does too): a page that does not
                    // would be read again and again.
                    if let first = page.keyValues.first, first.key.lexicographicallyPrecedes(start) {
                        throw EtcdError(.malformedResponse, "a page of keys started before the key it was asked from")
                    }
                    return (page, more)
                }
            } catch  where limit > pageSize {
                // Too large, or too slow (large values the page's size did not foresee): read again at the
                // first page's size, once.
                growing = false
                limit = pageSize
                continue
            }
            if revision == 0 {
                revision = page.revision
                clusterID = page.clusterID
            }
            keyValues += page.keyValues
            guard keyValues.count <= maximumKeys else {
                throw EtcdError(
                    .rejected,
                    "more than \(maximumKeys) keys are under \(String(decoding: prefix, as: UTF8.self)) in etcd: not "
                        + "what this prefix holds (keys put there by something else, or an endpoint that is not etcd)")
            }
            pages += 1
            if let afterPage = afterPage.withLock({ $0 }) { afterPage(pages) }
            guard more, let last = page.keyValues.last else { break }
            start = last.key + [0]
            if growing {
                largestValue = page.keyValues.reduce(largestValue) { max($0, $1.value.count) }
                limit = min(2 * limit, maximumPageSize, max(pageSize, Self.pageValueBytes / largestValue))
            }
        }
        return EtcdRangeResult(
            revision: revision, keyValues: keyValues, count: Int64(keyValues.count), clusterID: clusterID)
    }

    /// Puts `value` under `key`; returns the revision after the put.
    @discardableResult
    package func put(_ key: [UInt8], _ value: [UInt8]) throws(EtcdError) -> Int64 {
        try transaction(compare: [], success: [.put(key: key, value: value)]).revision
    }

    /// Runs `success` if every compare holds, else `failure`, atomically.
    package func transaction(compare: [EtcdCompare], success: [EtcdOperation], failure: [EtcdOperation] = [])
        throws(EtcdError) -> EtcdTransactionResult
    {
        let request: JSONValue = [
            "compare": .array(compare.map(EtcdJSON.compare)), "success": .array(success.map(EtcdJSON.operation)),
            "failure": .array(failure.map(EtcdJSON.operation)),
        ]
        let writes = (success + failure).contains {
            if case .range = $0 { return false }
            return true
        }
        return try call("/v3/kv/txn", request, idempotent: !writes) { answer throws(EtcdError) in
            try EtcdJSON.transactionResult(answer)
        }
    }

    /// Discards the history before `revision` (`/v3/kv/compaction`): watches from an older revision end
    /// as compacted. For operators and tests; a vault never compacts.
    package func compact(_ revision: Int64) throws(EtcdError) {
        try call("/v3/kv/compaction", ["revision": .string(String(revision))], idempotent: true) { _ in }
    }

    // MARK: Requests

    /// POSTs `request` to `path` on the endpoints in turn (see the type's comment) and returns what
    /// `read` makes of the decoded answer; an answer `read` refuses is named by its endpoint and path.
    /// A request that changes nothing waits at most the read deadline over all its tries, unless
    /// `bulk` (a page of a group's items, which the caller reads only once etcd answered it).
    func call<Answer>(
        _ path: String, _ request: JSONValue, idempotent: Bool, bulk: Bool = false,
        reading read: (JSONValue) throws(EtcdError) -> Answer
    ) throws(EtcdError) -> Answer {
        let body: [UInt8]
        do {
            body = try request.serialized()
        } catch {
            throw EtcdError(.invalidRequest, "cannot encode the request to \(path): \(error)")
        }
        let transport = try takeTransport()
        defer { giveBack(transport) }
        // A read's time is bounded as a whole, whatever the endpoints do: the cache answers after it.
        let deadline =
            idempotent && !bulk ? ContinuousClock.now + .milliseconds(configuration.readDeadlineMilliseconds) : nil
        let endpoints = configuration.endpoints
        let preferred = state.withLock { $0.preferred }
        var failures: [String] = []
        var reauthenticated = false
        var attempt = 0
        while attempt < endpoints.count {
            let index = (preferred + attempt) % endpoints.count
            let endpoint = endpoints[index]
            var requestOptions = options(token: nil)
            // The time left is shared by the endpoints not yet tried, so that one that never answers leaves
            // time for the next.
            func share() -> Bool {
                guard let deadline else { return true }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return false }
                requestOptions.limit(to: left / (endpoints.count - attempt))
                return true
            }
            guard share() else {
                failures.append(
                    "\(endpoint) and after: not tried, the read's deadline of "
                        + "\(configuration.readDeadlineMilliseconds) ms had passed")
                break
            }
            if configuration.user != nil {
                var token = state.withLock { $0.token }
                if token == nil {
                    do throws(EtcdError) {
                        token = try authenticate(transport, endpoint, options: requestOptions)
                        state.withLock { $0.token = token }
                        // The request gets what the authentication left of its share.
                        guard share() else {
                            failures.append(
                                "\(endpoint): authenticated, but the read's deadline of "
                                    + "\(configuration.readDeadlineMilliseconds) ms had passed")
                            break
                        }
                    } catch  where error.code == .unavailable {
                        failures.append("\(endpoint): \(error.message)")
                        attempt += 1
                        continue
                    }
                }
                requestOptions.authorization = token
            }
            requestOptions.freshConnection = !idempotent
            switch transport.post(endpoint + path, body: body, options: requestOptions) {
            case .failed(let failure):
                if idempotent, failure.truncated {
                    throw EtcdError(.responseTooLarge, "etcd at \(endpoint) answered \(path): \(failure.message)")
                }
                guard idempotent || failure.neverSent else {
                    throw EtcdError(
                        .outcomeUnknown,
                        "the write to etcd at \(endpoint) (\(path)) got no answer (\(failure.message)): it may or may "
                            + "not have been applied")
                }
                failures.append("\(endpoint): \(failure.message)")
            case .response(let status, let answer):
                guard let object = Self.gatewayObject(answer) else {
                    // The next endpoint is tried, unless a write may have gone through.
                    let what = Self.notEtcd(status, answer)
                    guard idempotent else {
                        state.withLock { $0.preferred = (index + 1) % endpoints.count }
                        throw EtcdError(
                            .outcomeUnknown,
                            "\(endpoint) \(what) to a write (\(path)): it may or may not have reached etcd")
                    }
                    failures.append("\(endpoint) \(what)")
                    attempt += 1
                    continue
                }
                if status == 200, object["error"] == nil {
                    state.withLock { $0.preferred = index }
                    do throws(EtcdError) {
                        return try read(object)
                    } catch {
                        throw EtcdError(
                            error.code, "etcd at \(endpoint) (\(path)): \(error.message)", grpcCode: error.grpcCode)
                    }
                }
                let message = object["message"]?.string ?? object["error"]?.string ?? "HTTP \(status)"
                let grpcCode = object["code"]?.integer
                if grpcCode == 16 || message.contains("invalid auth token"), configuration.user != nil,
                    !reauthenticated
                {
                    // An expired token, or one a restarted member no longer knows: once more, with a new one.
                    state.withLock { if $0.token == requestOptions.authorization { $0.token = nil } }
                    reauthenticated = true
                    continue
                }
                let credentials = ["user name is empty", "permission denied", "authentication failed"]
                if grpcCode == 16 || grpcCode == 7 || credentials.contains(where: message.contains) {
                    throw EtcdError(
                        .authentication, "etcd at \(endpoint) refused the request to \(path): \(message)",
                        grpcCode: grpcCode)
                }
                let noLeader = message.contains("no leader") || message.contains("leader changed")
                let retry = grpcCode == 14 && (idempotent || noLeader) || (grpcCode == 4 && idempotent)
                guard retry else {
                    if grpcCode == 4 || grpcCode == 14 {
                        throw EtcdError(
                            .outcomeUnknown,
                            "etcd at \(endpoint) did not confirm the write (\(path)): \(message); it may or may not "
                                + "have been applied", grpcCode: grpcCode)
                    }
                    throw EtcdError(
                        .rejected, "etcd at \(endpoint) refused the request to \(path): \(message)",
                        grpcCode: grpcCode)
                }
                failures.append("\(endpoint): \(message)")
            }
            attempt += 1
        }
        throw EtcdError(.unavailable, "no etcd endpoint answered \(path): " + failures.joined(separator: "; "))
    }
}
