import FoundationEssentials
import Synchronization
import VaultCrypto
import VaultSystem

/// The client's transports (one per request, from a small pool), their options, the stream target of
/// a watch, and etcd's authentication.
extension EtcdClient {
    /// A transport of this process that no other request is using: an idle one, or a new one. Each
    /// request has its own, so that threads never wait for each other's requests (a member that does not
    /// answer would hold every reader for its time limit in turn).
    func takeTransport() throws(EtcdError) -> HTTPTransport {
        let pid = ProcessIdentity.processID
        let idle = state.withLock { (state) -> HTTPTransport? in
            if state.processID != pid {
                // A forked child makes its own: it must never share the parent's connections, where each
                // could read the other's answers.
                state.idle = []
                state.token = nil
                state.processID = pid
            }
            return state.idle.popLast()
        }
        if let idle { return idle }
        guard let transport = HTTPTransport() else { throw EtcdError(.noTransport, HTTPTransport.unavailableReason) }
        return transport
    }

    /// Keeps `transport` (and its connections) for the next request, up to a few per client.
    func giveBack(_ transport: HTTPTransport) {
        let pid = ProcessIdentity.processID
        state.withLock { state in
            if state.processID == pid, state.idle.count < Self.idleTransportLimit { state.idle.append(transport) }
        }
    }

    /// How many idle transports a client keeps.
    static let idleTransportLimit = 4

    /// Where a stream (a watch) connects: the endpoint that answered last, and the options with a
    /// token (taken first, when the client authenticates). A stream has no overall time limit.
    ///
    /// The watch's thread is the library's own: it holds the client's lock only to read and store what
    /// it needs (no request is sent under it), so that a process that forks meanwhile hands its child no
    /// lock held by a thread the child does not have.
    func streamTarget() throws(EtcdError) -> (endpoint: String, options: TransportOptions) {
        let (endpoint, token) = state.withLock { (configuration.endpoints[$0.preferred], $0.token) }
        var options = self.options(token: token)
        if configuration.user != nil, token == nil {
            let transport = try takeTransport()
            defer { giveBack(transport) }
            let token = try authenticate(transport, endpoint, options: options)
            state.withLock { $0.token = token }
            options.authorization = token
        }
        options.timeoutMilliseconds = 0
        return (endpoint, options)
    }

    func options(token: String?) -> TransportOptions {
        var options = TransportOptions(
            caFile: configuration.caFile, certificateFile: configuration.certificateFile,
            keyFile: configuration.keyFile, authorization: token,
            timeoutMilliseconds: configuration.requestTimeoutMilliseconds,
            connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds)
        options.maximumBodyByteCount = configuration.maximumAnswerByteCount
        return options
    }

    /// `answer` as etcd's gateway sends every answer, a JSON object; nil for anything else (a proxy's
    /// error page, another web server), which the callers take for an endpoint that did not answer.
    static func gatewayObject(_ answer: [UInt8]) -> JSONValue? {
        guard let object = JSONValue.parse(answer), object.isObject else { return nil }
        return object
    }

    /// What an endpoint that is not etcd's gateway answered with.
    static func notEtcd(_ status: Int, _ answer: [UInt8]) -> String {
        "answered HTTP \(status) with \(answer.count) bytes that are not etcd's JSON"
    }

    /// A token for `configuration.user` from `endpoint` (`/v3/auth/authenticate`).
    func authenticate(_ transport: HTTPTransport, _ endpoint: String, options: TransportOptions)
        throws(EtcdError) -> String
    {
        guard let user = configuration.user, let password = configuration.password else {
            throw EtcdError(.invalidRequest, "etcd user \(configuration.user ?? "") has no password")
        }
        // The password is in this buffer only as long as the request; it is overwritten afterwards.
        var body = password.withTransientCopy { (bytes) -> [UInt8] in
            let text = String(decoding: bytes, as: UTF8.self)
            return (try? JSONValue.object(["name": .string(user), "password": .string(text)]).serialized()) ?? []
        }
        defer { body.wipe() }
        var options = options
        options.authorization = nil
        options.freshConnection = false
        switch transport.post(endpoint + "/v3/auth/authenticate", body: body, options: options) {
        case .failed(let failure):
            throw EtcdError(.unavailable, failure.message)
        case .response(let status, let answer):
            guard let object = Self.gatewayObject(answer) else {
                throw EtcdError(.unavailable, Self.notEtcd(status, answer))  // the next endpoint is asked
            }
            if status == 200, object["error"] == nil {
                guard let token = object["token"]?.string, !token.isEmpty else {
                    throw EtcdError(
                        .malformedResponse, "etcd at \(endpoint) answered the authentication of \(user) without a token"
                    )
                }
                return token
            }
            let message = object["message"]?.string ?? "HTTP \(status)"
            if message.contains("no leader") { throw EtcdError(.unavailable, message) }
            throw EtcdError(
                .authentication,
                "etcd at \(endpoint) refused user \(user): \(message) (check --etcd-user and the password file)",
                grpcCode: object["code"]?.integer)
        }
    }
}
