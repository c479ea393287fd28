import Foundation

@testable import VaultEtcd

/// A Python HTTP proxy in front of one etcd member that passes every request on, and once armed, puts
/// the first key of the first transaction that reads a key without its value (`keys_only`: the read of
/// a write's basis, whose first key is the manifest's root) again, the same value, just before it
/// passes that transaction on: a new `mod_revision`, as another machine's write makes. Each such put
/// is counted. Armed for an oversized answer instead, it answers the first read-only transaction with
/// a limited range (a refresh's read of the shards' range) with more bytes than the client takes.
final class InterposingProxy {
    // The test runner's threads block signals, and a child inherits the mask: unblocked here, or
    // `terminate()` would not end the server.
    static let script = """
        import http.server, json, signal, sys, threading, urllib.request
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
        upstream = sys.argv[1]
        state = {"armed": False, "puts": 0, "oversize": False, "oversized": 0}
        lock = threading.Lock()
        def post(path, body):
            request = urllib.request.Request(
                upstream + path, data=body, headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as answer:
                    return answer.status, answer.read()
            except urllib.error.HTTPError as error:
                return error.code, error.read()
        def has_limited_range(body):
            try:
                success = json.loads(body).get("success", [])
            except ValueError:
                return False
            return any(op.get("request_range", {}).get("limit") for op in success)
        def basis_key(body):
            try:
                success = json.loads(body).get("success", [])
            except ValueError:
                return None
            if not any(op.get("request_range", {}).get("keys_only") for op in success):
                return None
            return success[0].get("request_range", {}).get("key")
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def reply(self, status, body):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path in ("/arm", "/arm-oversize", "/count"):
                    with lock:
                        if self.path == "/arm":
                            state["armed"] = True
                        if self.path == "/arm-oversize":
                            state["oversize"] = True
                        self.reply(200, json.dumps(state).encode())
                    return
                with lock:
                    oversize = state["oversize"] and self.path == "/v3/kv/txn" and has_limited_range(body)
                    if oversize:
                        state["oversize"] = False
                        state["oversized"] += 1
                if oversize:
                    self.reply(200, b"{" + b"x" * (64 * 1024 * 1024 + 1))
                    return
                with lock:
                    key = basis_key(body) if state["armed"] and self.path == "/v3/kv/txn" else None
                    if key:
                        state["armed"] = False
                        _, found = post("/v3/kv/range", json.dumps({"key": key}).encode())
                        value = json.loads(found)["kvs"][0]["value"]
                        post("/v3/kv/put", json.dumps({"key": key, "value": value}).encode())
                        state["puts"] += 1
                status, answer = post(self.path, body)
                self.reply(status, answer)
            def log_message(self, *arguments):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        print(server.server_address[1], flush=True)
        server.serve_forever()
        """

    let server: PythonHTTPServer
    var endpoint: String { server.endpoint }

    /// A proxy in front of `upstream`.
    init(upstream: String) throws {
        server = try PythonHTTPServer(script: Self.script, arguments: [upstream], name: "interposing proxy")
    }

    /// Arms the proxy: the next write basis read finds the key put again just before it.
    func arm() throws { _ = try control("/arm") }

    /// Arms the proxy: the next read of the shards' range is answered with more than the client takes.
    func armOversize() throws { _ = try control("/arm-oversize") }

    /// How many times the proxy put the key again.
    func puts() throws -> Int { try control("/count")["puts"] as? Int ?? -1 }

    /// How many oversized answers the proxy gave.
    func oversized() throws -> Int { try control("/count")["oversized"] as? Int ?? -1 }

    private func control(_ path: String) throws -> [String: Any] {
        guard let transport = HTTPTransport(),
            case .response(200, let body) = transport.post(
                endpoint + path, body: Array("{}".utf8),
                options: TransportOptions(timeoutMilliseconds: 10_000, connectTimeoutMilliseconds: 2_000))
        else { throw EtcdError(.invalidRequest, "the interposing proxy did not answer \(path)") }
        return (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
    }
}
