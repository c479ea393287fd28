internal import CVaultCurl

/// What a request to one endpoint needs besides its URL and body.
struct TransportOptions: Sendable {
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    /// The etcd token for the `Authorization` header.
    var authorization: String?
    var timeoutMilliseconds: Int
    var connectTimeoutMilliseconds: Int
    /// The largest response body accepted.
    var maximumBodyByteCount = Self.defaultMaximumBodyByteCount
    static let defaultMaximumBodyByteCount = 64 << 20
    /// A new connection for this request, not kept afterwards (writes: see `vcurl_options`).
    var freshConnection = false

    /// Bounds the request, its connection included, to `limit` (at least a millisecond): a read's share
    /// of its deadline, which may be longer than the per-request time limit (a deadline set so).
    mutating func limit(to limit: Duration) {
        let (seconds, attoseconds) = limit.components
        let milliseconds = max(1, Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000))
        timeoutMilliseconds = milliseconds
        connectTimeoutMilliseconds = min(connectTimeoutMilliseconds, milliseconds)
    }
}

/// The outcome of a POST: a response (status and body), or a transport failure with curl's code and
/// message.
enum TransportOutcome {
    case response(status: Int, body: [UInt8])
    case failed(TransportFailure)
}

/// Why a POST got no response.
struct TransportFailure: Sendable {
    /// libcurl's `CURLcode`.
    let code: Int32
    let message: String
    /// Whether the response was cut off at the largest body taken.
    var truncated = false
    /// Whether the request cannot have reached the server (no connection was made, or TLS refused it
    /// before a byte of the request went out): safe to send again, also for a write.
    var neverSent: Bool { Self.beforeTheRequest.contains(code) }
    /// CURLE_NOT_BUILT_IN, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
    /// CURLE_UNKNOWN_OPTION (an option the shim needs, refused: the request is not sent), CURLE_SSL_CERTPROBLEM,
    /// CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR.
    static let beforeTheRequest: Set<Int32> = [4, 6, 7, 35, 48, 58, 59, 60, 77, 83]
    var timedOut: Bool { code == 28 }  // CURLE_OPERATION_TIMEDOUT
}

/// One libcurl easy handle (its connections are kept alive between requests). Not safe to use from
/// two threads at once: `EtcdClient` hands each to one request at a time.
final class HTTPTransport: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer

    init?() {
        guard let handle = vcurl_handle_new() else { return nil }
        self.handle = handle
    }

    /// Why `init` gave no transport: libcurl.so.4 could not be loaded (the loader's words), or curl
    /// could not make a handle.
    static var unavailableReason: String {
        guard let reason = vcurl_load_error() else { return "libcurl cannot make a handle (out of memory?)" }
        return "libcurl cannot be loaded: " + String(cString: reason)
    }

    deinit { vcurl_handle_free(handle) }

    /// POSTs `body` (JSON) to `url`: http or https only, never through a proxy, no redirects.
    func post(_ url: String, body: [UInt8], options: TransportOptions) -> TransportOutcome {
        var response = vcurl_response()
        defer { vcurl_response_free(&response) }
        let code = withCOptions(options) { cOptions in
            body.withUnsafeBufferPointer { bytes in
                vcurl_post_json(handle, url, bytes.baseAddress, bytes.count, &cOptions, &response)
            }
        }
        guard code == 0 else {
            let message = errorMessage(response)
            let truncated = response.truncated != 0
            return .failed(
                TransportFailure(
                    code: code,
                    message: truncated ? "the response was larger than \(options.maximumBodyByteCount) bytes" : message,
                    truncated: truncated))
        }
        let received =
            response.length == 0 ? [] : Array(UnsafeBufferPointer(start: response.body, count: response.length))
        return .response(status: Int(response.status), body: received)
    }
}

extension HTTPTransport {
    /// POSTs `body` and hands each piece of the response to `onData` as it arrives, and nil about once
    /// a second while nothing does; `onData` returns false to end the transfer. Returns the HTTP status
    /// when the server answered, else why not (a transfer that `onData` ended is code 23 or 42).
    func stream(_ url: String, body: [UInt8], options: TransportOptions, onData: ([UInt8]?) -> Bool) -> (
        status: Int, failure: TransportFailure?
    ) {
        final class Receiver {
            let onData: ([UInt8]?) -> Bool
            init(_ onData: @escaping ([UInt8]?) -> Bool) { self.onData = onData }
        }
        var response = vcurl_response()
        defer { vcurl_response_free(&response) }
        let code = withoutActuallyEscaping(onData) { onData in
            let receiver = Receiver(onData)
            let context = Unmanaged.passUnretained(receiver).toOpaque()
            return withCOptions(options) { cOptions in
                body.withUnsafeBufferPointer { bytes in
                    vcurl_stream_json(
                        handle, url, bytes.baseAddress, bytes.count, &cOptions,
                        { context, bytes, count in
                            let receiver = Unmanaged<Receiver>.fromOpaque(context!).takeUnretainedValue()
                            let chunk = bytes.map { Array(UnsafeBufferPointer(start: $0, count: count)) }
                            return receiver.onData(chunk) ? 0 : 1
                        }, context, &response)
                }
            }
        }
        let failure =
            code == 0
            ? nil
            : TransportFailure(
                code: code,
                message: errorMessage(response))
        return (Int(response.status), failure)
    }
}

/// curl's message in `response` (a NUL-terminated C array).
private func errorMessage(_ response: vcurl_response) -> String {
    withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

/// `options` as the shim's `vcurl_options`, its strings valid for the length of `body`.
private func withCOptions<R>(_ options: TransportOptions, _ body: (inout vcurl_options) -> R) -> R {
    withOptionalCString(options.caFile) { ca in
        withOptionalCString(options.certificateFile) { certificate in
            withOptionalCString(options.keyFile) { key in
                withOptionalCString(options.authorization) { authorization in
                    var cOptions = vcurl_options(
                        ca_file: ca, certificate_file: certificate, key_file: key, authorization: authorization,
                        timeout_ms: options.timeoutMilliseconds, connect_timeout_ms: options.connectTimeoutMilliseconds,
                        maximum_body: options.maximumBodyByteCount, fresh_connection: options.freshConnection ? 1 : 0)
                    return body(&cOptions)
                }
            }
        }
    }
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
