/// A failed etcd request: what kind of failure, a message naming the endpoints and the request, and
/// the server's or the transport's own words.
package struct EtcdError: Error, Sendable, CustomStringConvertible {
    /// The kinds of failure.
    package enum Code: Sendable, Equatable {
        /// No endpoint answered, or none had a leader: nothing was changed.
        case unavailable
        /// A write was sent but its outcome is unknown (a timeout after it went out): read to find out.
        case outcomeUnknown
        /// etcd refused the credentials (or the token could not be renewed).
        case authentication
        /// etcd answered with an error for the request itself (e.g. a value too large).
        case rejected
        /// The answer was not the JSON etcd's gateway sends.
        case malformedResponse
        /// A read's answer was larger than the client takes (`TransportOptions.maximumBodyByteCount`):
        /// every member would give the same, so no other endpoint is asked.
        case responseTooLarge
        /// A bad argument or configuration, found before anything was sent.
        case invalidRequest
        /// This process cannot send requests at all (libcurl cannot be loaded): no endpoint was tried,
        /// so nothing says etcd is out of reach, and a cache must not stand in for it.
        case noTransport
    }

    /// What kind of failure.
    package let code: Code
    /// What failed, naming the endpoints and the request.
    package let message: String
    /// The gRPC status code etcd gave, when it gave one.
    package let grpcCode: Int?

    /// An error of `code` saying `message`.
    package init(_ code: Code, _ message: String, grpcCode: Int? = nil) {
        self.code = code
        self.message = message
        self.grpcCode = grpcCode
    }

    /// The message.
    package var description: String { message }
}
