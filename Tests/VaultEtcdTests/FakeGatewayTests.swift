import Foundation
import Synchronization
import Testing
import VaultCrypto

@testable import VaultEtcd

/// A stand-in for etcd's gateway that sends answers a real etcd never would: a Python HTTP server
/// answering every POST to a path with a fixed body (status 200).
final class FakeGateway {
    // The test runner's threads block signals, and a child inherits the mask: unblocked here, or
    // `terminate()` would not end the server.
    static let script = """
        import http.server, json, signal, sys
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        answers = json.loads(sys.argv[1])
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                answer = answers.get(self.path, "{}")
                if isinstance(answer, str):
                    answer = {"body": answer}
                body = answer.get("body", "").encode() + b"x" * answer.get("fill", 0)
                self.send_response(answer.get("status", 200))
                self.send_header("Content-Type", answer.get("type", "application/json"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    /// An answer other than a 200 with a JSON body: `status`, a body of `type`, and `fill` bytes of "x"
    /// after it.
    struct Page {
        var status = 200
        var type = "application/json"
        var body = ""
        var fill = 0
        var json: [String: Any] { ["status": status, "type": type, "body": body, "fill": fill] }
    }

    let server: PythonHTTPServer
    var endpoint: String { server.endpoint }

    /// A server answering a POST to each path of `answers` with its body, and `{}` to any other.
    convenience init(_ answers: [String: String]) throws {
        try self.init(pages: answers.mapValues { Page(body: $0) })
    }

    /// A server answering a POST to each path of `pages` with that page, and `{}` to any other.
    init(pages: [String: Page]) throws {
        let json = try JSONSerialization.data(withJSONObject: pages.mapValues(\.json))
        server = try PythonHTTPServer(
            script: Self.script, arguments: [String(decoding: json, as: UTF8.self)], name: "fake gateway")
    }

    func client(user: String? = nil, after others: [FakeGateway] = []) throws -> EtcdClient {
        var configuration = try EtcdClient.Configuration(endpoints: others.map(\.endpoint) + [endpoint])
        if let user {
            configuration.user = user
            configuration.password = try SecureBytes(copying: Array("not-a-secret".utf8))
        }
        return EtcdClient(configuration)
    }
}

/// What the client does with answers of the wrong shape from a server that speaks HTTP: each is
/// `malformedResponse`, naming the endpoint, the request and the field.
@Suite struct FakeGatewayTests {
    static let header = #""header":{"revision":"9"}"#
    static let entry = #"{"key":"YQ==","value":"Yg==","create_revision":"2","mod_revision":"3","version":"1"}"#

    func expectMalformed(_ error: EtcdError?, from gateway: FakeGateway, naming field: String) {
        #expect(error?.code == .malformedResponse, "\(String(describing: error))")
        #expect(error?.message.contains("etcd at \(gateway.endpoint)") == true, "\(String(describing: error))")
        #expect(error?.message.contains(field) == true, "\(String(describing: error))")
    }

    @Test func aRangeOfTheWrongShapeNamesTheEndpointAndRequest() throws {
        let gateway = try FakeGateway(["/v3/kv/range": #"{\#(Self.header),"kvs":"YQ=="}"#])
        let error = #expect(throws: EtcdError.self) { _ = try gateway.client().range([1]) }
        expectMalformed(error, from: gateway, naming: "(/v3/kv/range): etcd sent kvs as a string")
    }

    /// A `more` that is not a boolean ended the paging before: a listing read short.
    @Test func pagingRefusesAMoreThatIsNotABooleanOrComesWithoutKeys() throws {
        for (answer, field) in [
            (#"{\#(Self.header),"kvs":[\#(Self.entry)],"more":"true"}"#, "more as a string"),
            (#"{\#(Self.header),"more":true}"#, "more keys follow a page that had none"),
        ] {
            let gateway = try FakeGateway(["/v3/kv/range": answer])
            let error = #expect(throws: EtcdError.self) { _ = try gateway.client().range(prefix: [1], pageSize: 1) }
            expectMalformed(error, from: gateway, naming: field)
        }
        // A last page as etcd sends it: no `more`.
        let gateway = try FakeGateway(["/v3/kv/range": #"{\#(Self.header),"kvs":[\#(Self.entry)],"count":"1"}"#])
        #expect(try gateway.client().range(prefix: [1], pageSize: 1).keyValues.map(\.key) == [Array("a".utf8)])
    }

    @Test func aTransactionOfTheWrongShapeNamesTheEndpointAndRequest() throws {
        let gateway = try FakeGateway(["/v3/kv/txn": #"{\#(Self.header),"succeeded":"no"}"#])
        let error = #expect(throws: EtcdError.self) { _ = try gateway.client().put([1], [2]) }
        expectMalformed(error, from: gateway, naming: "(/v3/kv/txn): etcd sent succeeded as a string")
    }

    /// Reported as refused credentials before, which sent the operator to check a password that was right.
    @Test func anAuthenticationWithoutATokenIsMalformedNotRefused() throws {
        let gateway = try FakeGateway(["/v3/auth/authenticate": #"{\#(Self.header)}"#])
        let error = #expect(throws: EtcdError.self) { _ = try gateway.client(user: "vault").range([1]) }
        expectMalformed(error, from: gateway, naming: "authentication of vault without a token")
    }

    /// A proxy's error page on the first endpoint made every read and write fail, though the next
    /// endpoint was a healthy member: a read now goes on to it, and a write (which may have gone
    /// through) names the endpoint and leaves it for the next request.
    @Test func anEndpointThatIsNotEtcdIsPassedOnReadsAndNamedOnWrites() throws {
        let html = FakeGateway.Page(status: 502, type: "text/html", body: "<html><body>502 Bad Gateway</body></html>")
        let proxy = try FakeGateway(pages: ["/v3/kv/range": html, "/v3/kv/txn": html])
        let member = try FakeGateway([
            "/v3/kv/range": #"{\#(Self.header),"kvs":[\#(Self.entry)],"count":"1"}"#,
            "/v3/kv/txn": #"{\#(Self.header),"succeeded":true}"#,
        ])
        #expect(try member.client(after: [proxy]).range([1]).keyValues.map(\.key) == [Array("a".utf8)])
        let writer = try member.client(after: [proxy])
        let error = #expect(throws: EtcdError.self) { try writer.put([1], [2]) }
        #expect(error?.code == .outcomeUnknown, "\(String(describing: error))")
        #expect(error?.message.contains("\(proxy.endpoint) answered HTTP 502") == true, "\(String(describing: error))")
        #expect(try writer.put([1], [2]) == 9, "the next write goes to the member")
        // The same with an etcd user: the proxy's answer to the authentication is passed too.
        let authenticating = try FakeGateway([
            "/v3/auth/authenticate": #"{\#(Self.header),"token":"t"}"#,
            "/v3/kv/range": #"{\#(Self.header),"kvs":[\#(Self.entry)],"count":"1"}"#,
        ])
        let proxyFirst = try FakeGateway(pages: ["/v3/auth/authenticate": html, "/v3/kv/range": html])
        let reader = try authenticating.client(user: "vault", after: [proxyFirst])
        #expect(try reader.range([1]).keyValues.map(\.key) == [Array("a".utf8)])
        // With no member at all, a read names each endpoint's answer.
        let alone = #expect(throws: EtcdError.self) { _ = try proxy.client().range([1]) }
        #expect(alone?.code == .unavailable && alone?.message.contains("not etcd's JSON") == true)
    }

    /// An endpoint that answered "more" for ever was read for ever (3.68 GB after 3,895 pages).
    @Test func pagingEndsAtAPageThatDoesNotMoveOnAndAtTheCallersBound() throws {
        let forever = try FakeGateway(["/v3/kv/range": #"{\#(Self.header),"kvs":[\#(Self.entry)],"more":true}"#])
        let error = #expect(throws: EtcdError.self) { _ = try forever.client().range(prefix: [1], pageSize: 1) }
        expectMalformed(error, from: forever, naming: "started before the key it was asked from")
        let entries = ["YQ==", "Yg==", "Yw=="].map {
            #"{"key":"\#($0)","value":"Yg==","create_revision":"2","mod_revision":"3","version":"1"}"#
        }
        let three = try FakeGateway([
            "/v3/kv/range": #"{\#(Self.header),"kvs":[\#(entries.joined(separator: ","))],"count":"3"}"#
        ])
        #expect(try three.client().range(prefix: [1], pageSize: 5, maximumKeys: 3).keyValues.count == 3)
        let bounded = #expect(throws: EtcdError.self) {
            _ = try three.client().range(prefix: [1], pageSize: 5, maximumKeys: 2)
        }
        #expect(bounded?.code == .rejected && bounded?.message.contains("more than 2 keys") == true)
    }

    /// A read's answer larger than the client takes is `responseTooLarge`, and no other endpoint is
    /// asked: every member holds the same keys. (It was `unavailable` after every endpoint before, as if
    /// etcd were out of reach, and a caller could not tell to read less.)
    @Test func anAnswerTooLargeIsSaidSoWithoutAskingTheOtherEndpoints() throws {
        let large = try FakeGateway(pages: [
            "/v3/kv/txn": FakeGateway.Page(body: "{", fill: TransportOptions.defaultMaximumBodyByteCount + 1)
        ])
        let answering = try FakeGateway(["/v3/kv/txn": #"{\#(Self.header),"succeeded":true,"responses":[]}"#])
        var configuration = try EtcdClient.Configuration(endpoints: [large.endpoint, answering.endpoint])
        // Time enough for the whole answer on a loaded machine: what is tested is its size, not its time.
        configuration.readDeadlineMilliseconds = 60_000
        let client = EtcdClient(configuration)
        let error = #expect(throws: EtcdError.self) {
            _ = try client.transaction(compare: [], success: [.range(key: [1], rangeEnd: nil)])
        }
        #expect(error?.code == .responseTooLarge, "\(String(describing: error))")
        #expect(error?.message.contains("etcd at \(large.endpoint)") == true, "\(String(describing: error))")
        #expect(error?.message.contains("larger than") == true, "\(String(describing: error))")
    }

    /// A watch answer without a newline was kept and scanned whole at each piece (CPU and memory
    /// without bound): the watch now ends once a line is longer than any answer is allowed to be.
    @Test func aWatchLineWithoutANewlineEndsTheWatch() throws {
        let gateway = try FakeGateway(pages: [
            "/v3/watch": FakeGateway.Page(fill: EtcdWatch.maximumLineByteCount + 1_000_000)
        ])
        let ended = Mutex<EtcdWatchEnd?>(nil)
        let watch = EtcdWatch(
            client: try gateway.client(), prefix: [1], fromRevision: 0, onEvents: { _, _ in },
            onEnd: { end in ended.withLock { $0 = end } })
        defer { watch.cancel() }
        let deadline = ContinuousClock.now + .seconds(60)
        while ended.withLock({ $0 }) == nil, ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        guard case .failed(let message) = ended.withLock({ $0 }) else {
            Issue.record("the watch did not end: \(String(describing: ended.withLock { $0 }))")
            return
        }
        #expect(message.contains("a watch line of more than \(EtcdWatch.maximumLineByteCount) bytes"), "\(message)")
    }
}
