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
    var maximumBodyByteCount = 8 << 20
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
    /// Whether the request cannot have reached the server (no connection was made, or TLS refused it
    /// before a byte of the request went out): safe to send again, also for a write.
    var neverSent: Bool { Self.beforeTheRequest.contains(code) }
    /// CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM,
    /// CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR.
    static let beforeTheRequest: Set<Int32> = [6, 7, 35, 58, 59, 60, 77, 83]
    var timedOut: Bool { code == 28 }  // CURLE_OPERATION_TIMEDOUT
}

/// One libcurl easy handle (its connections are kept alive between requests). Not safe to use from
/// two threads at once: `EtcdClient` holds it under its lock.
final class HTTPTransport {
    private let handle: UnsafeMutableRawPointer

    init?() {
        guard let handle = vcurl_handle_new() else { return nil }
        self.handle = handle
    }

    deinit { vcurl_handle_free(handle) }

    /// POSTs `body` (JSON) to `url`: http or https only, never through a proxy, no redirects.
    func post(_ url: String, body: [UInt8], options: TransportOptions) -> TransportOutcome {
        var response = vcurl_response()
        defer { vcurl_response_free(&response) }
        let code = withOptionalCString(options.caFile) { ca in
            withOptionalCString(options.certificateFile) { certificate in
                withOptionalCString(options.keyFile) { key in
                    withOptionalCString(options.authorization) { authorization in
                        var cOptions = vcurl_options(
                            ca_file: ca, certificate_file: certificate, key_file: key, authorization: authorization,
                            timeout_ms: options.timeoutMilliseconds,
                            connect_timeout_ms: options.connectTimeoutMilliseconds,
                            maximum_body: options.maximumBodyByteCount)
                        return body.withUnsafeBufferPointer { bytes in
                            vcurl_post_json(handle, url, bytes.baseAddress, bytes.count, &cOptions, &response)
                        }
                    }
                }
            }
        }
        guard code == 0 else {
            let message = withUnsafeBytes(of: response.error) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            let truncated = response.truncated != 0
            return .failed(
                TransportFailure(
                    code: code,
                    message: truncated ? "the response was larger than \(options.maximumBodyByteCount) bytes" : message)
            )
        }
        let received =
            response.length == 0 ? [] : Array(UnsafeBufferPointer(start: response.body, count: response.length))
        return .response(status: Int(response.status), body: received)
    }
}

private func withOptionalCString<R>(_ string: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let string else { return body(nil) }
    return string.withCString { body($0) }
}
