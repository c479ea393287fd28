import Testing

@testable import VaultEtcd

/// Answers and watch lines that etcd's gateway could not have sent are refused, naming the field,
/// never read as fewer keys, no events or default values.
@Suite struct MalformedAnswerTests {
    static let header = #""header":{"cluster_id":"7","revision":"9"}"#
    /// The revisions of a key that exists (inside an entry: `{"key":"…","\#(revisions)}`).
    static let revisions = #"create_revision":"2","mod_revision":"3","version":"2""#

    func object(_ text: String) throws -> JSONValue {
        try #require(JSONValue.parse(Array(text.utf8)), "\(text)")
    }

    func expectMalformed(
        _ text: String, naming field: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ read: (JSONValue) throws(EtcdError) -> Void
    ) throws {
        let answer = try object(text)
        let error = #expect(throws: EtcdError.self, sourceLocation: sourceLocation) { try read(answer) }
        #expect(error?.code == .malformedResponse, "\(text)", sourceLocation: sourceLocation)
        #expect(
            error?.message.contains(field) == true, "\(String(describing: error)) for \(text)",
            sourceLocation: sourceLocation)
    }

    @Test func aRangeWhoseKeysAreNotAListOfKeyValuesIsRefused() throws {
        let cases: [(String, String)] = [
            (#"{\#(Self.header),"kvs":"Zm9v"}"#, "kvs"),
            (#"{\#(Self.header),"kvs":{"key":"Zm9v"}}"#, "kvs"),
            (#"{\#(Self.header),"kvs":null}"#, "kvs"),
            (#"{\#(Self.header),"kvs":[{"key":"Zm9v"},"Zm9v"]}"#, "entry 1 of kvs"),
            (#"{\#(Self.header),"kvs":[[{"key":"Zm9v"}]]}"#, "entry 0 of kvs"),
            (#"{\#(Self.header),"kvs":[{"value":"YmFy","mod_revision":"3"}]}"#, "kvs without a key"),
            (#"{\#(Self.header),"kvs":[{"key":"Zm9v","mod_revision":true}]}"#, "mod_revision"),
            (#"{\#(Self.header),"kvs":[{"key":"","value":"YmFy","\#(Self.revisions)}]}"#, "kvs without a key"),
            (
                #"{\#(Self.header),"kvs":[{"key":"Zm9v","create_revision":"2","version":"1"}]}"#,
                "without a mod_revision"
            ),
            (
                #"{\#(Self.header),"kvs":[{"key":"Zm9v","mod_revision":"2","version":"1"}]}"#,
                "without a create_revision"
            ),
            (
                #"{\#(Self.header),"kvs":[{"key":"Zm9v","mod_revision":"2","create_revision":"2"}]}"#,
                "without a version"
            ),
            (#"{"header":{"cluster_id":"7"},"kvs":[{"key":"Zm9v","\#(Self.revisions)}]}"#, "no revision"),
            (#"{"header":{"revision":"0"}}"#, "no revision"),
        ]
        for (text, field) in cases {
            try expectMalformed(text, naming: field) { answer throws(EtcdError) in
                _ = try EtcdJSON.rangeResult(answer, header: try EtcdJSON.header(answer))
            }
        }
        // What the gateway does send: no kvs at all for an empty range, no value for keys only.
        let empty = try object(#"{\#(Self.header)}"#)
        #expect(try EtcdJSON.rangeResult(empty, header: try EtcdJSON.header(empty)).keyValues.isEmpty)
        let keysOnly = try object(#"{\#(Self.header),"kvs":[{"key":"Zm9v","\#(Self.revisions)}],"count":"1"}"#)
        #expect(
            try EtcdJSON.rangeResult(keysOnly, header: try EtcdJSON.header(keysOnly)).keyValues == [
                EtcdKeyValue(key: Array("foo".utf8), value: [], createRevision: 2, modRevision: 3, version: 2)
            ])
    }

    @Test func aHeaderOfTheWrongShapeIsRefused() throws {
        for (text, field) in [
            (#"{"header":"9"}"#, "header"), (#"{"header":{"revision":"9","cluster_id":7}}"#, "cluster_id"),
            (#"{"header":{"revision":"x"}}"#, "revision"),
            // The next revision, where a watch starts, would overflow.
            (#"{"header":{"revision":"9223372036854775807","cluster_id":"7"}}"#, "revision 9223372036854775807"),
        ] {
            try expectMalformed(text, naming: field) { answer throws(EtcdError) in _ = try EtcdJSON.header(answer) }
        }
    }

    @Test func aTransactionOfTheWrongShapeIsRefused() throws {
        let cases: [(String, String)] = [
            (#"{\#(Self.header),"succeeded":"true"}"#, "succeeded"),
            (#"{\#(Self.header),"succeeded":true,"responses":{"response_put":{}}}"#, "responses"),
            (#"{\#(Self.header),"succeeded":true,"responses":[{"response_put":{}},7]}"#, "entry 1 of responses"),
            (#"{\#(Self.header),"responses":[{"response_range":[]}]}"#, "response_range"),
            (#"{\#(Self.header),"responses":[{"response_range":{"kvs":[{}]}}]}"#, "kvs without a key"),
            (#"{"header":{},"succeeded":true}"#, "no revision"),
        ]
        for (text, field) in cases {
            try expectMalformed(text, naming: field) { answer throws(EtcdError) in
                _ = try EtcdJSON.transactionResult(answer)
            }
        }
        // A failed compare is left out as proto3's default.
        let failed = try EtcdJSON.transactionResult(try object(#"{\#(Self.header)}"#))
        #expect(!failed.succeeded)
        #expect(failed.ranges.isEmpty)
    }

    @Test func flagsAreBooleansOrLeftOut() throws {
        let answer = try object(#"{"a":true,"b":false,"c":"true","d":1,"e":null}"#)
        #expect(try EtcdJSON.flag(answer, "a"))
        #expect(try !EtcdJSON.flag(answer, "b"))
        #expect(try !EtcdJSON.flag(answer, "missing"))
        for name in ["c", "d", "e"] {
            let error = #expect(throws: EtcdError.self) { try EtcdJSON.flag(answer, name) }
            #expect(error?.code == .malformedResponse)
            #expect(error?.message.contains("\(name) as") == true, "\(String(describing: error))")
        }
    }

    @Test func watchLinesOfTheRightShapeAreRead() throws {
        let put =
            #"{"result":{\#(Self.header),"events":[{"kv":{"key":"YQ==","value":"Yg==","mod_revision":"9","#
            + #""create_revision":"4","version":"2"}},{"type":"DELETE","kv":{"key":"Yw==","mod_revision":"9"}}]}}"#
        #expect(
            EtcdWatch.decode(Array(put.utf8))
                == .events(
                    [
                        .put(
                            EtcdKeyValue(
                                key: Array("a".utf8), value: Array("b".utf8), createRevision: 4, modRevision: 9,
                                version: 2)),
                        .delete(key: Array("c".utf8), modRevision: 9),
                    ], 9))
        #expect(EtcdWatch.decode(Array(#"{"result":{\#(Self.header),"created":true}}"#.utf8)) == .created)
        // Progress, and a created line as etcd's grpc-proxy makes one up for a watch from "now" (revision 0).
        #expect(EtcdWatch.decode(Array(#"{"result":{\#(Self.header)}}"#.utf8)) == .events([], 0))
        #expect(EtcdWatch.decode(Array(#"{"result":{"header":{"revision":"0"},"created":true}}"#.utf8)) == .created)
        // A compaction's end as etcd 3.4 sends it: a header without a revision.
        #expect(
            EtcdWatch.decode(
                Array(#"{"result":{"header":{"cluster_id":"7"},"compact_revision":"5","canceled":true}}"#.utf8))
                == .end(.compacted(compactRevision: 5)))
        #expect(
            EtcdWatch.decode(Array(#"{"result":{\#(Self.header),"compact_revision":"5"}}"#.utf8))
                == .end(.compacted(compactRevision: 5)))
    }

    /// Lines etcd could not have sent end the watch. Most of these were skipped or read with a default
    /// before: the watch's owner would have missed a change (or seen one at revision 0) and kept
    /// serving what it had.
    @Test func aWatchLineOfTheWrongShapeEndsTheWatch() throws {
        let cases: [(String, String)] = [
            (#"{"result":{\#(Self.header),"events":["YQ=="]}}"#, "entry 0 of events"),
            (#"{"result":{\#(Self.header),"events":{"kv":{"key":"YQ=="}}}}"#, "events"),
            (#"{"result":{\#(Self.header),"events":[{"type":"PUT"}]}}"#, "without a kv"),
            (#"{"result":{\#(Self.header),"events":[{"kv":"YQ=="}]}}"#, "kv"),
            (#"{"result":{\#(Self.header),"events":[{"kv":{"value":"Yg=="}}]}}"#, "events without a key"),
            (#"{"result":{\#(Self.header),"events":[{"kv":{"key":"YQ==","mod_revision":"x"}}]}}"#, "mod_revision"),
            (#"{"result":{\#(Self.header),"events":[{"kv":{"key":"YQ==","value":"%%"}}]}}"#, "not base64"),
            (
                #"{"result":{\#(Self.header),"events":[{"type":"PATCH","kv":{"key":"YQ==","\#(Self.revisions)}}]}}"#,
                "PATCH"
            ),
            (
                #"{"result":{\#(Self.header),"events":[{"kv":{"key":"YQ==","value":"Yg=="}}]}}"#,
                "without a mod_revision"
            ),
            (#"{"result":{\#(Self.header),"events":[{"kv":{"key":"YQ==","mod_revision":"9"}}]}}"#, "create_revision"),
            (#"{"result":{\#(Self.header),"events":[{"type":"DELETE","kv":{"key":"YQ=="}}]}}"#, "mod_revision"),
            (#"{"result":{\#(Self.header),"events":[{"kv":{"key":"","\#(Self.revisions)}}]}}"#, "events without a key"),
            (#"{"result":{"header":{},"events":[{"kv":{"key":"YQ==","\#(Self.revisions)}}]}}"#, "no revision"),
            (#"{"header":{"revision":"9"}}"#, "neither a result nor an error"),
            (#"{"error":"gone"}"#, "error as a string"),
            (#"{"result":{\#(Self.header),"canceled":true,"cancel_reason":7}}"#, "cancel_reason"),
            (#"{"result":{"events":[{"kv":{"key":"YQ==","\#(Self.revisions)}}]}}"#, "no header"),
            (#"{"result":{\#(Self.header),"created":"yes"}}"#, "created"),
            (#"{"result":{\#(Self.header),"canceled":1}}"#, "canceled"),
            (#"{"result":"events"}"#, "result"),
        ]
        for (text, field) in cases {
            guard case .end(.failed(let message)) = EtcdWatch.decode(Array(text.utf8)) else {
                Issue.record("\(text) did not end the watch: \(EtcdWatch.decode(Array(text.utf8)))")
                continue
            }
            #expect(message.contains("malformed") && message.contains(field), "\(message) for \(text)")
        }
    }

    /// etcd's own ends of a watch, read as they are meant (cancelled before the created flag counts).
    @Test func aWatchThatEtcdEndsEndsWithItsReason() {
        for (text, expected) in [
            (#"{"result":{\#(Self.header),"created":true,"canceled":true,"cancel_reason":"bad range"}}"#, "bad range"),
            (#"{"result":{\#(Self.header),"canceled":true}}"#, "no reason given"),
            (#"{"error":{"grpc_code":14,"message":"no leader"}}"#, "no leader"),
        ] {
            guard case .end(.failed(let message)) = EtcdWatch.decode(Array(text.utf8)) else {
                Issue.record("\(text) did not end the watch: \(EtcdWatch.decode(Array(text.utf8)))")
                continue
            }
            #expect(message.contains(expected) && !message.contains("malformed"), "\(message) for \(text)")
        }
    }
}
