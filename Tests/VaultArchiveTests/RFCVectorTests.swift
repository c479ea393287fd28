import Foundation
import Testing

@testable import VaultArchive

/// RFC 8949 Appendix A examples, from Vectors/rfc8949-appendix-a.txt (located through `#filePath`).
@Suite struct RFCVectorTests {
    struct Vector: CustomTestStringConvertible, Sendable {
        var expectation: String
        var hex: String
        var diagnostic: String
        var typed: String?
        var testDescription: String { "\(diagnostic) [\(hex)]" }
    }

    static let vectors: [Vector] = {
        let url = testsDirectory.appendingPathComponent("Vectors/rfc8949-appendix-a.txt")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") || line.isEmpty { return nil }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return Vector(
                expectation: fields[0],
                hex: fields[1],
                diagnostic: fields[2],
                typed: fields.count > 3 ? fields[3] : nil
            )
        }
    }()

    @Test func vectorFileIsComplete() {
        #expect(Self.vectors.count == 81)
        #expect(Self.vectors.filter { $0.expectation == "reject" }.count == 20)
    }

    @Test(arguments: vectors)
    func vector(_ vector: Vector) throws {
        let input = archive(vector.hex)
        switch vector.expectation {
        case "canonical":
            let item = try VaultArchive.scan(input)
            #expect(hex(VaultArchive.write(item)) == hex(input))
        case "reject":
            #expect(throws: DecodingError.self) { try VaultArchive.scan(input) }
        default:
            Issue.record("unknown expectation \(vector.expectation)")
        }
        if let typed = vector.typed {
            try checkTyped(typed, input)
        }
    }

    private func same<T: Codable & Equatable>(_ type: T.Type, _ input: [UInt8], _ expected: T) throws {
        let value = try VaultArchive.decode(T.self, from: input)
        #expect(value == expected)
        #expect(try VaultArchive.encode(value) == input)
    }

    private func checkTyped(_ typed: String, _ input: [UInt8]) throws {
        // The type ends at the first ':' after its closing bracket, if it has one.
        let typeEnd = typed.hasPrefix("[") ? typed.firstIndex(of: "]")! : typed.startIndex
        let colon = typed[typeEnd...].firstIndex(of: ":")!
        let type = String(typed[..<colon])
        let text = String(typed[typed.index(after: colon)...])
        func list(_ s: String) -> [String] { s.isEmpty ? [] : s.split(separator: ",").map(String.init) }
        switch type {
        case "Int": try same(Int.self, input, Int(text)!)
        case "UInt64": try same(UInt64.self, input, UInt64(text)!)
        case "Bool": try same(Bool.self, input, text == "true")
        case "String": try same(String.self, input, text)
        case "Float": try same(Float.self, input, Float(text)!)
        case "Double":
            let value = try VaultArchive.decode(Double.self, from: input)
            if text == "nan" {
                #expect(value.isNaN)
            } else {
                let expected = Double(text)!
                #expect(value == expected && value.sign == expected.sign)
            }
            #expect(try VaultArchive.encode(value) == input)
        case "Optional": try same(Int?.self, input, nil)
        case "Date": try same(Date.self, input, Date(timeIntervalSince1970: Double(text)!))
        case "URL": try same(URL.self, input, URL(string: text)!)
        case "Data": try same(Data.self, input, Data(bytes(hex: text)))
        case "[Int]": try same([Int].self, input, list(text).map { Int($0)! })
        case "[String:Int]": try same([String: Int].self, input, [:])
        case "[Int:Int]":
            var expected: [Int: Int] = [:]
            for pair in list(text) {
                let parts = pair.split(separator: "=")
                expected[Int(parts[0])!] = Int(parts[1])!
            }
            try same([Int: Int].self, input, expected)
        case "[String:String]":
            var expected: [String: String] = [:]
            for pair in list(text) {
                let parts = pair.split(separator: "=")
                expected[String(parts[0])] = String(parts[1])
            }
            try same([String: String].self, input, expected)
        default:
            Issue.record("unknown type \(type)")
        }
    }
}
