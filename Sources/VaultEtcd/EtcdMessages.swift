import FoundationEssentials

/// A key and its value as etcd holds them, with the revisions a compare-and-swap needs.
package struct EtcdKeyValue: Sendable, Equatable {
    /// The key's bytes.
    package let key: [UInt8]
    /// The value's bytes.
    package let value: [UInt8]
    /// The revision that created the key (since its last deletion).
    package let createRevision: Int64
    /// The revision of the key's last change.
    package let modRevision: Int64
    /// How many times the key was written since it was created.
    package let version: Int64
}

/// The answer to a range: the store's revision when it was read, and the keys found (in key order).
package struct EtcdRangeResult: Sendable, Equatable {
    /// The store's revision when it was read.
    package let revision: Int64
    /// The keys found, in key order.
    package let keyValues: [EtcdKeyValue]
    /// How many keys the range holds.
    package let count: Int64
    /// The cluster that answered (a restored cluster may come back with another).
    package let clusterID: String

    /// A result: `keyValues` read at `revision` from cluster `clusterID`.
    package init(revision: Int64, keyValues: [EtcdKeyValue], count: Int64, clusterID: String) {
        self.revision = revision
        self.keyValues = keyValues
        self.count = count
        self.clusterID = clusterID
    }
}

/// One condition of a transaction.
package enum EtcdCompare: Sendable, Equatable {
    /// The key's last modification is at `revision` (0: the key does not exist).
    case modRevision(key: [UInt8], equals: Int64)
    /// The key was created at `revision` (0: it does not exist).
    case createRevision(key: [UInt8], equals: Int64)
    /// The key holds exactly `value`.
    case value(key: [UInt8], equals: [UInt8])
}

/// One operation of a transaction.
package enum EtcdOperation: Sendable, Equatable {
    /// Puts `value` under `key`.
    case put(key: [UInt8], value: [UInt8])
    /// Deletes `key`, or every key in [`key`, `rangeEnd`).
    case delete(key: [UInt8], rangeEnd: [UInt8]?)
    /// Reads `key`, or every key in [`key`, `rangeEnd`), at `revision` when it is not 0 (in a
    /// transaction that only reads); with `keysOnly`, their keys and revisions without their values;
    /// with a `limit` above 0, that many keys at most (the result's `count` still says how many there are).
    case range(key: [UInt8], rangeEnd: [UInt8]?, revision: Int64 = 0, keysOnly: Bool = false, limit: Int = 0)
}

/// The answer to a transaction: whether its compares held, the revision after it, and the result of
/// each `range` operation of the branch that ran (nil for the other operations).
package struct EtcdTransactionResult: Sendable, Equatable {
    /// Whether every compare held (the success branch ran).
    package let succeeded: Bool
    /// The store's revision after the transaction.
    package let revision: Int64
    /// The result of each `range` operation of the branch that ran, nil for the others.
    package let ranges: [EtcdRangeResult?]
}

/// The JSON of etcd 3.4's gateway (`/v3/...`): keys and values in base64, 64-bit integers as strings,
/// and, being proto3, every field at its default value left out (`succeeded: false`, an empty `kvs`).
enum EtcdJSON {
    static func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// The end of the range of every key that starts with `prefix`.
    static func prefixEnd(_ prefix: [UInt8]) -> [UInt8] {
        var end = prefix
        while let last = end.last {
            if last < 0xff {
                end[end.count - 1] = last + 1
                return end
            }
            end.removeLast()
        }
        return [0]  // every key
    }

    static func rangeRequest(
        _ key: [UInt8], rangeEnd: [UInt8]?, serializable: Bool = false, keysOnly: Bool = false, limit: Int = 0,
        revision: Int64 = 0
    ) -> JSONValue {
        var request: [String: JSONValue] = ["key": .string(base64(key))]
        if let rangeEnd { request["range_end"] = .string(base64(rangeEnd)) }
        if serializable { request["serializable"] = true }
        if keysOnly { request["keys_only"] = true }
        if limit > 0 { request["limit"] = .string(String(limit)) }
        if revision > 0 { request["revision"] = .string(String(revision)) }
        return .object(request)
    }

    static func compare(_ compare: EtcdCompare) -> JSONValue {
        switch compare {
        case .modRevision(let key, let revision):
            return [
                "key": .string(base64(key)), "target": "MOD", "result": "EQUAL",
                "mod_revision": .string(String(revision)),
            ]
        case .createRevision(let key, let revision):
            return [
                "key": .string(base64(key)), "target": "CREATE", "result": "EQUAL",
                "create_revision": .string(String(revision)),
            ]
        case .value(let key, let value):
            return ["key": .string(base64(key)), "target": "VALUE", "result": "EQUAL", "value": .string(base64(value))]
        }
    }

    static func operation(_ operation: EtcdOperation) -> JSONValue {
        switch operation {
        case .put(let key, let value):
            return ["request_put": ["key": .string(base64(key)), "value": .string(base64(value))]]
        case .delete(let key, let rangeEnd):
            var request: [String: JSONValue] = ["key": .string(base64(key))]
            if let rangeEnd { request["range_end"] = .string(base64(rangeEnd)) }
            return ["request_delete_range": .object(request)]
        case .range(let key, let rangeEnd, let revision, let keysOnly, let limit):
            return [
                "request_range": rangeRequest(
                    key, rangeEnd: rangeEnd, keysOnly: keysOnly, limit: limit, revision: revision)
            ]
        }
    }

    /// Field `name` as `read` takes it, or nil when the gateway left it out; a field `read` does not take
    /// (nil) is malformed, named with the `shape` it should have had.
    private static func field<Value>(
        _ object: JSONValue, _ name: String, _ shape: String, _ read: (JSONValue) -> Value?
    ) throws(EtcdError) -> Value? {
        guard let field = object[name] else { return nil }
        guard let value = read(field) else {
            throw EtcdError(.malformedResponse, "etcd sent \(name) as \(field.kind), not \(shape)")
        }
        return value
    }

    /// An int64 field, which the gateway sends as a string (and leaves out when 0).
    static func integer(_ object: JSONValue, _ name: String) throws(EtcdError) -> Int64 {
        try field(object, name, "an integer") { field in
            switch field {
            case .string(let text): Int64(text)
            case .number(let number): Int64(exactly: number)
            default: nil
            }
        } ?? 0
    }

    static func bytes(_ object: JSONValue, _ name: String) throws(EtcdError) -> [UInt8] {
        guard let field = object[name] else { return [] }
        guard let text = field.string, let data = Data(base64Encoded: text) else {
            throw EtcdError(.malformedResponse, "etcd sent \(name) that is not base64")
        }
        return Array(data)
    }

    /// A boolean field, which the gateway leaves out when false.
    static func flag(_ object: JSONValue, _ name: String) throws(EtcdError) -> Bool {
        try field(object, name, "a boolean", \.bool) ?? false
    }

    /// A string field, which the gateway leaves out when empty.
    static func text(_ object: JSONValue, _ name: String) throws(EtcdError) -> String {
        try field(object, name, "a string", \.string) ?? ""
    }

    /// A field that is an object (nil when left out).
    static func object(_ object: JSONValue, _ name: String) throws(EtcdError) -> JSONValue? {
        try field(object, name, "an object") { $0.isObject ? $0 : nil }
    }

    /// A repeated field of messages (`kvs`, `responses`, `events`): an array of objects, which the
    /// gateway leaves out when empty. Anything else is refused rather than read as no entries: a
    /// listing read as empty would look like keys that are gone.
    static func objects(_ object: JSONValue, _ name: String) throws(EtcdError) -> [JSONValue] {
        let elements = try field(object, name, "an array", \.array) ?? []
        for (index, element) in elements.enumerated() where !element.isObject {
            throw EtcdError(
                .malformedResponse, "etcd sent entry \(index) of \(name) as \(element.kind), not an object")
        }
        return elements
    }

    /// The header's revision and cluster id. etcd's revisions start at 1, so a header without one is
    /// malformed: read as 0, it would let a paged range read its pages at different revisions.
    static func header(_ object: JSONValue) throws(EtcdError) -> (revision: Int64, clusterID: String) {
        guard let header = try self.object(object, "header") else {
            throw EtcdError(.malformedResponse, "etcd's answer has no header")
        }
        let revision = try integer(header, "revision")
        guard revision > 0 else {
            throw EtcdError(.malformedResponse, "etcd's answer has no revision in its header")
        }
        // The next revision (a watch's start) must exist: etcd never gets near the end of Int64.
        guard revision < Int64.max else {
            throw EtcdError(.malformedResponse, "etcd's answer has revision \(revision), which no etcd reaches")
        }
        return (revision, try text(header, "cluster_id"))
    }

    /// A key-value of a range's `kvs` or of a watch event (`field` names it in messages). etcd has no
    /// empty key and no revision 0, and a key that exists was created at a revision and has a version:
    /// one without them is malformed (read as 0, an event would not count as a change). A deleted key's
    /// kv has only its key and the deletion's revision.
    static func keyValue(_ entry: JSONValue, in field: String, deleted: Bool = false) throws(EtcdError)
        -> EtcdKeyValue
    {
        let keyValue = EtcdKeyValue(
            key: try bytes(entry, "key"), value: try bytes(entry, "value"),
            createRevision: try integer(entry, "create_revision"), modRevision: try integer(entry, "mod_revision"),
            version: try integer(entry, "version"))
        let missing: String? =
            if keyValue.key.isEmpty {
                "a key"
            } else if keyValue.modRevision <= 0 {
                "a mod_revision"
            } else if !deleted, keyValue.createRevision <= 0 {
                "a create_revision"
            } else if !deleted, keyValue.version <= 0 {
                "a version"
            } else {
                nil
            }
        if let missing { throw EtcdError(.malformedResponse, "etcd sent an entry of \(field) without \(missing)") }
        return keyValue
    }

    static func rangeResult(_ object: JSONValue, header: (revision: Int64, clusterID: String)) throws(EtcdError)
        -> EtcdRangeResult
    {
        var keyValues: [EtcdKeyValue] = []
        for entry in try objects(object, "kvs") {
            keyValues.append(try keyValue(entry, in: "kvs"))
        }
        return EtcdRangeResult(
            revision: header.revision, keyValues: keyValues, count: try integer(object, "count"),
            clusterID: header.clusterID)
    }

    static func transactionResult(_ object: JSONValue) throws(EtcdError) -> EtcdTransactionResult {
        let header = try header(object)
        var ranges: [EtcdRangeResult?] = []
        for response in try objects(object, "responses") {
            if let range = try self.object(response, "response_range") {
                ranges.append(try rangeResult(range, header: header))
            } else {
                ranges.append(nil)
            }
        }
        return EtcdTransactionResult(
            succeeded: try flag(object, "succeeded"), revision: header.revision, ranges: ranges)
    }
}
