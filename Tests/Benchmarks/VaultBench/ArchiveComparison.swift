// The archive part of `vault-bench` (also alone: `vault-bench --archive-only`): encode+decode time per
// operation and encoded size of two keychain payloads, VaultArchive side by side with
// JSONEncoder/JSONDecoder, PropertyListEncoder/Decoder (binary) and NSKeyedArchiver/Unarchiver, in one run.
import Foundation
import VaultArchive

/// The benchmark's credential record.
struct Credentials: Codable, Equatable {
    var username: String
    var password: String
    var created: Date
    var tags: [String]
}

/// The same record for NSKeyedArchiver.
final class CredentialsObject: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }
    let username: String
    let password: String
    let created: Date
    let tags: [String]

    init(_ c: Credentials) {
        username = c.username
        password = c.password
        created = c.created
        tags = c.tags
    }

    init?(coder: NSCoder) {
        guard let u = coder.decodeObject(of: NSString.self, forKey: "username"),
            let p = coder.decodeObject(of: NSString.self, forKey: "password"),
            let d = coder.decodeObject(of: NSDate.self, forKey: "created"),
            let t = coder.decodeObject(of: [NSArray.self, NSString.self], forKey: "tags") as? [String]
        else { return nil }
        username = u as String
        password = p as String
        created = d as Date
        tags = t
    }

    func encode(with coder: NSCoder) {
        coder.encode(username as NSString, forKey: "username")
        coder.encode(password as NSString, forKey: "password")
        coder.encode(created as NSDate, forKey: "created")
        coder.encode(tags as NSArray, forKey: "tags")
    }
}

/// Measures `body` (one encode+decode) and returns nanoseconds per operation: the best of `rounds` rounds.
func measure(iterations: Int, rounds: Int = 7, _ body: () throws -> Int) rethrows -> (ns: Double, sink: Int) {
    var sink = 0
    for _ in 0..<(iterations / 10) { sink &+= try body() }  // warm up
    var best = Double.infinity
    let clock = ContinuousClock()
    for _ in 0..<rounds {
        let start = clock.now
        for _ in 0..<iterations { sink &+= try body() }
        let elapsed = clock.now - start
        let ns = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        best = min(best, ns / Double(iterations))
    }
    return (best, sink)
}

struct Row {
    var payload: String
    var coder: String
    var ns: Double
    var size: Int
}

/// Runs the comparison; `iterations` per round (7 rounds, the best kept). With `profileOnly`, only
/// VaultArchive on Credentials, for a profiler.
func compareArchives(iterations: Int, profileOnly: Bool = false) throws -> [Row] {
    let dictionary = ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"]
    let credentials = Credentials(
        username: "alice@example.com",
        password: "correct horse battery staple",
        created: Date(timeIntervalSince1970: 1_764_460_800.25),
        tags: ["mail", "work", "imap"]
    )
    if profileOnly {
        let r = try measure(iterations: iterations) {
            try VaultArchive.decode(Credentials.self, from: try VaultArchive.encode(credentials)) == credentials ? 1 : 0
        }
        return [Row(payload: "Credentials", coder: "VaultArchive (CBOR)", ns: r.ns, size: 0)]
    }
    var rows: [Row] = []
    var sink = 0

    func codable<T: Codable & Equatable>(_ name: String, _ value: T) throws {
        let archive = try VaultArchive.encode(value)
        let back = try VaultArchive.decode(T.self, from: archive)
        precondition(back == value)
        var r = try measure(iterations: iterations) {
            try VaultArchive.decode(T.self, from: try VaultArchive.encode(value)) == value ? 1 : 0
        }
        rows.append(Row(payload: name, coder: "VaultArchive (CBOR)", ns: r.ns, size: archive.count))
        sink &+= r.sink

        let json = JSONEncoder()
        let jsonDecoder = JSONDecoder()
        let jsonBytes = try json.encode(value)
        r = try measure(iterations: iterations) {
            try jsonDecoder.decode(T.self, from: try json.encode(value)) == value ? 1 : 0
        }
        rows.append(Row(payload: name, coder: "JSONEncoder/JSONDecoder", ns: r.ns, size: jsonBytes.count))
        sink &+= r.sink

        let plist = PropertyListEncoder()
        plist.outputFormat = .binary
        let plistDecoder = PropertyListDecoder()
        let plistBytes = try plist.encode(value)
        r = try measure(iterations: iterations) {
            try plistDecoder.decode(T.self, from: try plist.encode(value)) == value ? 1 : 0
        }
        rows.append(Row(payload: name, coder: "PropertyListEncoder (binary)", ns: r.ns, size: plistBytes.count))
        sink &+= r.sink
    }

    try codable("dictionary", dictionary)
    let nsDictionary = dictionary as NSDictionary
    let keyedDictionary = try NSKeyedArchiver.archivedData(withRootObject: nsDictionary, requiringSecureCoding: true)
    var r = try measure(iterations: iterations) {
        let data = try NSKeyedArchiver.archivedData(withRootObject: nsDictionary, requiringSecureCoding: true)
        let back = try NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSDictionary.self, NSString.self], from: data)
        return (back as? [String: String]) == dictionary ? 1 : 0
    }
    precondition(r.sink > 0)
    rows.append(Row(payload: "dictionary", coder: "NSKeyedArchiver", ns: r.ns, size: keyedDictionary.count))

    try codable("Credentials", credentials)
    let object = CredentialsObject(credentials)
    let keyedObject = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
    r = try measure(iterations: iterations) {
        let data = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
        let back = try NSKeyedUnarchiver.unarchivedObject(ofClass: CredentialsObject.self, from: data)
        return back?.username == credentials.username && back?.tags == credentials.tags ? 1 : 0
    }
    precondition(r.sink > 0)
    rows.append(Row(payload: "Credentials", coder: "NSKeyedArchiver", ns: r.ns, size: keyedObject.count))

    if sink == 42 { print("") }
    return rows
}

/// The comparison as timings for the report: each coder's encode+decode, with the ratio of
/// VaultArchive to the fastest of the others (below 1: faster than every one of them) and each
/// other coder's ratio to VaultArchive.
func archiveTimings(_ rows: [Row]) -> (timings: [OperationTiming], sizes: [String: Int]) {
    var timings: [OperationTiming] = []
    var sizes: [String: Int] = [:]
    for payload in ["dictionary", "Credentials"] {
        let payloadRows = rows.filter { $0.payload == payload }
        guard let mine = payloadRows.first(where: { $0.coder.hasPrefix("VaultArchive") }) else { continue }
        let others = payloadRows.filter { !$0.coder.hasPrefix("VaultArchive") }
        for row in payloadRows {
            var timing = OperationTiming(
                operation: "archive \(payload): \(row.coder)", items: 1, nanoseconds: [row.ns])
            if row.coder.hasPrefix("VaultArchive"), let fastest = others.min(by: { $0.ns < $1.ns }) {
                timing.floor = "fastest other coder (\(fastest.coder))"
                timing.floorMedianNanoseconds = fastest.ns
                timing.ratio = row.ns / fastest.ns
            } else {
                timing.floor = "VaultArchive"
                timing.floorMedianNanoseconds = mine.ns
                timing.ratio = row.ns / mine.ns
            }
            timings.append(timing)
            sizes["\(payload), \(row.coder)"] = row.size
        }
    }
    return (timings, sizes)
}
