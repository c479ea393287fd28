import Foundation
import Testing

@testable import VaultArchive

/// The Python 3 the interop tests run: the first of `python3` on PATH and `/usr/bin/python3` that
/// imports cbor2 (Debian's python3-cbor2 is installed for /usr/bin/python3, which a pyenv or venv
/// `python3` may come before on PATH), or nil when none does.
private let pythonWithCBOR2: String? = {
    for candidate in ["python3", "/usr/bin/python3"] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [candidate, "-c", "import cbor2"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { continue }
        process.waitUntilExit()
        if process.terminationStatus == 0 { return candidate }
    }
    return nil
}()

/// Put before every script: the C encoder of cbor2 5.4 (Debian 12's python3-cbor2) writes 65504.0 and
/// -65504.0, the largest half-precision values, as float32 in canonical mode; its pure-Python encoder
/// writes them as float16, as cbor2 6 does. Its decoder goes with it: the C decoder's tags are of a
/// class the pure-Python encoder does not know.
private let cbor2Prologue = #"""
    import cbor2
    if cbor2.dumps(65504.0, canonical=True) != b"\xf9\x7b\xff":
        import cbor2.decoder, cbor2.encoder, cbor2.types
        cbor2.dumps, cbor2.CBORTag = cbor2.encoder.dumps, cbor2.types.CBORTag
        cbor2.loads = cbor2.decoder.loads

    """#

/// Runs `script` with a Python 3 that has cbor2, `input` on stdin, and returns its stdout lines.
private func python(_ script: String, input: String) throws -> [String] {
    guard let interpreter = pythonWithCBOR2 else {
        throw InteropError.python(
            "neither python3 on PATH nor /usr/bin/python3 imports cbor2 (Debian: apt-get install python3-cbor2)")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [interpreter, "-c", cbor2Prologue + script]
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw InteropError.python(
            "\(interpreter) exited with \(process.terminationStatus): \(String(decoding: errors, as: UTF8.self))")
    }
    return String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
}

private enum InteropError: Error {
    case python(String)
}

/// Interoperability with Python's cbor2 (https://pypi.org/project/cbor2/), both ways.
@Suite struct InteropTests {
    /// Reads hex archives from stdin, decodes each with cbor2 (which unwraps tag 55799), re-encodes the
    /// decoded value canonically inside the same envelope, and prints hex plus a short description.
    static let pythonReencode = #"""
        import sys, cbor2, datetime
        for line in sys.stdin.read().split():
            value = cbor2.loads(bytes.fromhex(line))
            assert isinstance(value, (list, tuple)) and value[0] == 1, value
            again = cbor2.dumps(cbor2.CBORTag(55799, [1, value[1]]), canonical=True, datetime_as_timestamp=True,
                                timezone=datetime.timezone.utc)
            print(again.hex(), type(value[1]).__name__)
        """#

    @Test func archivesDecodeWithCBOR2AndComeBackIdentical() throws {
        let uuid = UUID(uuidString: "9D820D3A-4429-4918-97F7-A69588B388A4")!
        let archives: [[UInt8]] = [
            try VaultArchive.encode(["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"]),
            try VaultArchive.encode(
                Credentials(
                    username: "alice",
                    password: "pässword",
                    created: Date(timeIntervalSince1970: 1_700_000_000.25),
                    tags: ["mail", "work"]
                )
            ),
            try VaultArchive.encode(Date(timeIntervalSince1970: 1_363_896_240)),
            try VaultArchive.encode(uuid),
            try VaultArchive.encode(URL(string: "https://example.com/a?b=c")!),
            try VaultArchive.encode(Data([0, 1, 2, 255])),
            try VaultArchive.encode([Int.min, -1, 0, 23, 24, Int.max]),
            try VaultArchive.encode([UInt64.max]),
            try VaultArchive.encode([0.0, -0.0, 1.5, 1.1, 100_000.0, .infinity, -.infinity, 65504.0, 1e300]),
            try VaultArchive.encode([Float(1.1), .greatestFiniteMagnitude]),
            try VaultArchive.encode([1: "a", 70_000: "b", 300: "c"]),
            try VaultArchive.encode([-1: "a", -70_000: "b", -300: "c"]),
            try VaultArchive.encode(["": [0, 1], "nested": [Int?.none, 1]]),
            try VaultArchive.encode(FuzzWrapper(tag: 7, values: [true], inner: FuzzNode(name: "n", children: []))),
            try VaultArchive.encode(String(repeating: "long ✓ ", count: 100)),
        ]
        let lines = try python(Self.pythonReencode, input: archives.map(hex).joined(separator: "\n"))
        // A mixed-sign [Int: V] (bytewise order: 1, 300, -5) decodes in cbor2 too (checked by value below).
        #expect(lines.count == archives.count)
        for (archive, line) in zip(archives, lines) {
            let fields = line.split(separator: " ")
            #expect(String(fields[0]) == hex(archive), "cbor2 re-encoded \(fields.dropFirst()) differently")
        }
        // What cbor2 made of the typed items.
        #expect(lines[2].hasSuffix(" datetime"))
        #expect(lines[3].hasSuffix(" UUID"))
        #expect(lines[5].hasSuffix(" bytes"))
    }

    /// Python values encoded by cbor2 in its canonical mode, in the archive envelope, one hex per line.
    static let pythonEncode = #"""
        import sys, cbor2, datetime, uuid
        def archive(value):
            return cbor2.dumps(cbor2.CBORTag(55799, [1, value]), canonical=True, datetime_as_timestamp=True).hex()
        utc = datetime.timezone.utc
        values = [
            {"com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"},
            {"username": "bob", "password": "hunter2", "created": datetime.datetime(2024, 1, 2, 3, 4, 5, 500000, utc),
             "tags": ["x", "y"]},
            {1: "a", 70000: "b", 300: "c"},
            [0.0, -0.0, 1.5, 1.1, 100000.0, float("inf"), float("-inf"), 65504.0, 5.960464477539063e-08],
            [float("nan")],
            uuid.UUID("9d820d3a-4429-4918-97f7-a69588b388a4"),
            b"\x00\x01\xff",
            "üñí ✓",
            None,
            [True, False],
            [0, 23, 24, 255, 256, 65535, 65536, 2**32, 2**63 - 1, -1, -24, -25, -2**63],
            2**64 - 1,
            datetime.datetime(2013, 3, 21, 20, 4, 0, tzinfo=utc),
            {1: "a", -5: "b", 300: "c"},
        ]
        for value in values:
            print(archive(value))
        """#

    @Test func cbor2CanonicalOutputDecodesHereAndReencodesIdentically() throws {
        let lines = try python(Self.pythonEncode, input: "").map { bytes(hex: $0) }
        try #require(lines.count == 14)

        func check<T: Codable & Equatable>(_ index: Int, _ type: T.Type, _ expected: T) throws {
            let value = try VaultArchive.decode(T.self, from: lines[index])
            #expect(value == expected, "line \(index)")
            #expect(try VaultArchive.encode(value) == lines[index], "line \(index) re-encoded differently")
        }
        try check(0, [String: String].self, ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"])
        try check(
            1,
            Credentials.self,
            Credentials(
                username: "bob",
                password: "hunter2",
                created: Date(timeIntervalSince1970: 1_704_164_645.5),
                tags: ["x", "y"]
            )
        )
        try check(2, [Int: String].self, [1: "a", 70_000: "b", 300: "c"])
        let doubles = try VaultArchive.decode([Double].self, from: lines[3])
        #expect(doubles == [0.0, -0.0, 1.5, 1.1, 100_000.0, .infinity, -.infinity, 65504.0, 5.960464477539063e-08])
        #expect(doubles[1].sign == .minus)
        #expect(try VaultArchive.encode(doubles) == lines[3])
        #expect(try VaultArchive.decode([Double].self, from: lines[4])[0].isNaN)
        #expect(try VaultArchive.encode([Double.nan]) == lines[4])
        try check(5, UUID.self, UUID(uuidString: "9D820D3A-4429-4918-97F7-A69588B388A4")!)
        try check(6, Data.self, Data([0, 1, 255]))
        try check(7, String.self, "üñí ✓")
        try check(8, Int?.self, nil)
        try check(9, [Bool].self, [true, false])
        try check(10, [Int].self, [0, 23, 24, 255, 256, 65535, 65536, 1 << 32, Int.max, -1, -24, -25, Int.min])
        try check(11, UInt64.self, UInt64.max)
        try check(12, Date.self, Date(timeIntervalSince1970: 1_363_896_240))
        // cbor2's canonical mode sorts map keys length-first (RFC 7049 §3.9), not bytewise (RFC 8949 §4.2.1);
        // the two differ only for maps mixing major types, i.e. [Int: V] with negative and non-negative keys:
        // -5 (24) sorts before 300 (19 01 2c) length-first but after it bytewise. Such input is rejected.
        expectRejected([Int: String].self, lines[13], "not in deterministic (bytewise) order")
    }
}

extension InteropTests {
    @Test func mixedSignIntegerKeysDecodeInCBOR2() throws {
        let archive = try VaultArchive.encode([1: "a", -5: "b", 300: "c"])
        #expect(hex(archive) == "d9d9f78201a3" + "016161" + "19012c6163" + "246162")
        let script = "import sys, cbor2; v = cbor2.loads(bytes.fromhex(sys.stdin.read())); print(sorted(v[1].items()))"
        let lines = try python(script, input: hex(archive))
        #expect(lines == ["[(-5, 'b'), (1, 'a'), (300, 'c')]"])
    }
}
