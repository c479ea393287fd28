// `swift run -c release --scratch-path .build/release-bench archive-bench`
//
// Encode+decode time per operation and encoded size of two keychain payloads, VaultArchive side by side with
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

func run() throws {
    let dictionary = ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"]
    let credentials = Credentials(
        username: "alice@example.com",
        password: "correct horse battery staple",
        created: Date(timeIntervalSince1970: 1_764_460_800.25),
        tags: ["mail", "work", "imap"]
    )
    let iterations = Int(CommandLine.arguments.dropFirst().first ?? "") ?? 20_000
    // `archive-bench N profile`: only VaultArchive on Credentials, for a profiler.
    if CommandLine.arguments.count > 2, CommandLine.arguments[2] == "profile" {
        let r = try measure(iterations: iterations) {
            try VaultArchive.decode(Credentials.self, from: try VaultArchive.encode(credentials)) == credentials ? 1 : 0
        }
        print(String(format: "VaultArchive Credentials: %.2f µs", r.ns / 1000), r.sink > 0 ? "" : "?")
        return
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

    print("archive-bench: encode+decode per operation (best of 7 rounds of \(iterations)), encoded size")
    print("| payload | coder | encode+decode | size (bytes) | time vs VaultArchive |")
    print("|---|---|---:|---:|---:|")
    for payload in ["dictionary", "Credentials"] {
        let mine = rows.first { $0.payload == payload && $0.coder.hasPrefix("VaultArchive") }!.ns
        for row in rows where row.payload == payload {
            let us = String(format: "%.2f µs", row.ns / 1000)
            let ratio = String(format: "%.1f×", row.ns / mine)
            print("| \(row.payload) | \(row.coder) | \(us) | \(row.size) | \(ratio) |")
        }
    }
    if sink == 42 { print("") }
}

do {
    try run()
} catch {
    print("archive-bench failed: \(error)")
}
