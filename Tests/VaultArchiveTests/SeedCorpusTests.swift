import Foundation
import Testing

@testable import VaultArchive

/// The seed corpus for the fuzz targets: one valid archive per mapped type, plus edge cases. Set
/// `VAULT_WRITE_SEEDS=1` to (re)write Fuzz/corpus; the test always checks that every seed that should be
/// valid decodes and round trips.
@Suite struct SeedCorpusTests {
    static func seeds() throws -> [(String, [UInt8])] {
        func e<T: Encodable>(_ name: String, _ value: T) throws -> (String, [UInt8]) {
            (name, try VaultArchive.encode(value))
        }
        let uuid = UUID(uuidString: "9D820D3A-4429-4918-97F7-A69588B388A4")!
        let node = FuzzNode(name: "root", children: [FuzzNode(name: "leaf", children: [])])
        var deep = FuzzNode(name: "d", children: [])
        for _ in 0..<60 { deep = FuzzNode(name: "d", children: [deep]) }
        let record = FuzzRecord(
            int: -5,
            int8: -128,
            int16: 300,
            int32: -70_000,
            int64: Int64.min,
            uint: 24,
            uint8: 255,
            uint16: 65_535,
            uint32: 4_294_967_295,
            uint64: UInt64.max,
            float: 3.4028235e38,
            double: 1.1,
            bool: true,
            string: "héllo ✓",
            data: Data([0, 1, 2]),
            bytes: [0xFF],
            date: Date(timeIntervalSince1970: 1_700_000_000.25),
            uuid: uuid,
            url: URL(string: "https://example.com/a?b=c")!,
            list: [1, -1, 1000],
            names: ["a": 1, "bb": 2],
            numbered: [1: "one", -2: "minus two", 300: "x"]
        )
        return [
            try e("int-0", 0), try e("int-23", 23), try e("int-24", 24), try e("int-256", 256),
            try e("int-65536", 65_536), try e("int-2p32", 1 << 32), try e("int-max", Int.max),
            try e("int-min", Int.min), try e("int-minus1", -1), try e("int-minus25", -25),
            try e("uint64-max", UInt64.max), try e("int8", Int8.min), try e("uint16", UInt16.max),
            try e("bool-true", true), try e("bool-false", false),
            try e("double-zero", 0.0), try e("double-negzero", -0.0), try e("double-1.5", 1.5),
            try e("double-1.1", 1.1), try e("double-1e300", 1e300), try e("double-inf", Double.infinity),
            try e("double-nan", Double.nan), try e("double-subnormal-half", 5.960464477539063e-8),
            try e("float-single", Float(100_000.0)), try e("float-max", Float.greatestFiniteMagnitude),
            try e("string-empty", ""), try e("string-a", "a"), try e("string-unicode", "üñí ✓ 𝄞"),
            try e("string-300", String(repeating: "x", count: 300)),
            try e("data-empty", Data()), try e("data", Data([1, 2, 3, 4])), try e("bytes", [UInt8](0..<32)),
            try e("date-int", Date(timeIntervalSince1970: 1_363_896_240)),
            try e("date-fraction", Date(timeIntervalSince1970: 1_363_896_240.5)),
            try e("date-negative", Date(timeIntervalSince1970: -86_400)),
            try e("uuid", uuid), try e("url", URL(string: "http://www.example.com")!),
            try e("null", Int?.none), try e("optional-array", [1, nil, 3] as [Int?]),
            try e("array-empty", [Int]()), try e("array-nested", [[1], [2, 3]]),
            try e("dict-keychain", ["com.app.uuid": "9D820D3A-4429-4918-97F7-A69588B388A4"]),
            try e("dict-int", [1: "a", -5: "b", 300: "c"]), try e("dict-empty", [String: Int]()),
            try e("dict-uuid-url", [uuid: URL(string: "https://a.b")!]),
            try e("dates", [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 0.5)]),
            try e("record", record), try e("node", node), try e("node-deep", deep),
            try e("wrapper", FuzzWrapper(tag: 7, values: [true, false], inner: node)),
            try e("spellings", FuzzSpellings(precomposed: 1, decomposed: 2)),
            try e(
                "credentials",
                Credentials(
                    username: "alice",
                    password: "correct horse",
                    created: Date(timeIntervalSince1970: 1_700_000_000),
                    tags: ["mail", "work"]
                )
            ),
            // Edge cases the decoder must reject (not valid archives).
            ("bad-empty", []), ("bad-no-envelope", bytes(hex: "a0")),
            ("bad-version", bytes(hex: "d9d9f78202a0")), ("bad-trailing", archive("0000")),
            ("bad-nonshortest", archive("1817")), ("bad-indefinite", archive("9fff")),
            ("bad-dupkey", archive("a2616101616102")), ("bad-order", archive("a2616201616101")),
            ("bad-utf8", archive("62c328")), ("bad-undefined", archive("f7")), ("bad-simple", archive("f820")),
            ("bad-nan", archive("fa7fc00000")), ("bad-float-width", archive("fa3fc00000")),
            ("bad-long-count", archive("9b00ffffffffffffff")), ("tag-unknown", archive("d8ff00")),
            ("bad-deep", archive(String(repeating: "81", count: 300) + "00")),
        ]
    }

    @Test func seedsRoundTripAndMayBeWritten() throws {
        let directory = packageRoot.appendingPathComponent("Fuzz/corpus")
        let write = ProcessInfo.processInfo.environment["VAULT_WRITE_SEEDS"] == "1"
        for (name, bytes) in try Self.seeds() {
            if !name.hasPrefix("bad-") {
                #expect(ArchiveFuzzOracle.roundTrip(bytes) == nil, "\(name)")
                #expect(try VaultArchive.write(VaultArchive.scan(bytes)) == bytes, "\(name)")
            } else {
                #expect(throws: DecodingError.self, "\(name)") { try VaultArchive.scan(bytes) }
            }
            if write {
                try Data(bytes).write(to: directory.appendingPathComponent("seed-\(name).cbor"))
            }
        }
    }

    /// Every committed seed (including any added by hand) must be handled without trapping.
    @Test func committedCorpusReplays() throws {
        let directory = packageRoot.appendingPathComponent("Fuzz/corpus")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        for name in names.sorted() {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
            ArchiveFuzzOracle.decodeOnly(bytes)
            #expect(ArchiveFuzzOracle.roundTrip(bytes) == nil, "\(name)")
        }
    }
}

/// Every input that ever crashed a fuzz target (scripts/fuzz copies them here) is replayed on each test run.
@Suite struct RegressionTests {
    @Test func regressionsReplay() throws {
        let directory = testsDirectory.appendingPathComponent("Regressions")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names.sorted() where name.hasSuffix(".cbor") {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
            ArchiveFuzzOracle.decodeOnly(bytes)
            #expect(ArchiveFuzzOracle.roundTrip(bytes) == nil, "\(name)")
        }
    }
}
