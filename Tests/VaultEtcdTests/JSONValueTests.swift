import Foundation
import Testing

@testable import VaultEtcd

/// The etcd client's JSON, read and written without Foundation's JSONSerialization.
@Suite struct JSONValueTests {
    /// A range answer as etcd 3.4's gateway gives it (etcd's "gRPC gateway" guide: keys and values in
    /// base64, 64-bit integers as strings).
    @Test func aRangeAnswerReadsAsEtcdMeantIt() throws {
        let answer = """
            {"header":{"cluster_id":"12585971608760269493","member_id":"13847567121247652255","revision":"2",\
            "raft_term":"3"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1",\
            "value":"YmFy"}],"count":"1","more":false}
            """
        let object = try #require(JSONValue.parse(Array(answer.utf8)))
        let header = try EtcdJSON.header(object)
        #expect(header.revision == 2)
        #expect(header.clusterID == "12585971608760269493")
        let range = try EtcdJSON.rangeResult(object, header: header)
        #expect(range.count == 1)
        #expect(
            range.keyValues == [
                EtcdKeyValue(
                    key: Array("foo".utf8), value: Array("bar".utf8), createRevision: 2, modRevision: 2, version: 1)
            ])
        #expect(object["more"]?.bool == false)
    }

    @Test func anErrorAnswerKeepsItsCodeAsANumber() throws {
        let answer = #"{"error":"etcdserver: user name is empty","code":2,"message":"etcdserver: user name is empty"}"#
        let object = try #require(JSONValue.parse(Array(answer.utf8)))
        #expect(object["code"]?.integer == 2)
        #expect(object["message"]?.string == "etcdserver: user name is empty")
        #expect(object["token"] == nil)
    }

    @Test func aTransactionAnswerListsItsRangesInOrder() throws {
        let answer = """
            {"header":{"revision":"7"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"7"}}},\
            {"response_range":{"header":{"revision":"7"},"kvs":[{"key":"YQ==","value":"","mod_revision":"7",\
            "create_revision":"6","version":"2"}]}}]}
            """
        let result = try EtcdJSON.transactionResult(try #require(JSONValue.parse(Array(answer.utf8))))
        #expect(result.succeeded)
        #expect(result.revision == 7)
        #expect(result.ranges.count == 2)
        #expect(result.ranges[0] == nil)
        #expect(result.ranges[1]?.keyValues.first?.key == Array("a".utf8))
        #expect(result.ranges[1]?.keyValues.first?.value == [])
    }

    @Test func integersComeAsTextOrNumbersAndNothingElse() throws {
        let object = try #require(JSONValue.parse(Array(#"{"a":"12","b":7,"c":true,"d":"x","e":1.5}"#.utf8)))
        #expect(try EtcdJSON.integer(object, "a") == 12)
        #expect(try EtcdJSON.integer(object, "b") == 7)
        #expect(try EtcdJSON.integer(object, "missing") == 0)
        for name in ["c", "d", "e"] {
            let error = #expect(throws: EtcdError.self) { try EtcdJSON.integer(object, name) }
            #expect(error?.code == .malformedResponse)
            #expect(error?.message.contains(name) == true, "\(String(describing: error))")
        }
        let notBase64 = #expect(throws: EtcdError.self) { try EtcdJSON.bytes(object, "d") }
        #expect(notBase64?.message.contains("not base64") == true)
    }

    @Test func notJSONIsNil() {
        for text in ["", "{", "{\"a\":}", "[1,2", "nul", "\"unterminated"] {
            #expect(JSONValue.parse(Array(text.utf8)) == nil, "\(text)")
        }
    }

    /// What the client sends is JSON that Foundation reads back to the same values.
    @Test func requestsSerializeToTheJSONEtcdExpects() throws {
        let request: JSONValue = [
            "compare": .array([EtcdJSON.compare(.modRevision(key: [1, 2], equals: 5))]),
            "success": .array([EtcdJSON.operation(.put(key: Array("k".utf8), value: [0xff]))]),
            "failure": .array([EtcdJSON.operation(.range(key: [9], rangeEnd: nil))]),
            "flag": true, "nothing": .null, "quote": "a\"b\\c\n",
        ]
        let bytes = try request.serialized()
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        let compare = try #require((decoded["compare"] as? [[String: Any]])?.first)
        #expect(compare["key"] as? String == "AQI=")
        #expect(compare["target"] as? String == "MOD")
        #expect(compare["mod_revision"] as? String == "5")
        let put = try #require(((decoded["success"] as? [[String: Any]])?.first)?["request_put"] as? [String: String])
        #expect(put == ["key": "aw==", "value": "/w=="])
        #expect(decoded["flag"] as? Bool == true)
        #expect(decoded["nothing"] is NSNull)
        #expect(decoded["quote"] as? String == "a\"b\\c\n")
        #expect(JSONValue.parse(bytes) == request)
    }
}
