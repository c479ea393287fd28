import Foundation
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
                body = answers.get(self.path, "{}").encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments):
                pass
        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    let process = Process()
    let endpoint: String

    /// A server answering a POST to each path of `answers` with its body, and `{}` to any other.
    init(_ answers: [String: String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let json = try JSONSerialization.data(withJSONObject: answers)
        process.arguments = ["python3", "-c", Self.script, String(decoding: json, as: UTF8.self)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line: [UInt8] = []
        while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw EtcdError(.invalidRequest, "the fake gateway (python3) did not start")
        }
        endpoint = "http://127.0.0.1:\(port)"
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    func client(user: String? = nil) throws -> EtcdClient {
        var configuration = try EtcdClient.Configuration(endpoints: [endpoint])
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
}
