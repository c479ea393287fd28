import Foundation
import Testing

@testable import VaultArchive

/// The benchmark's credential record.
struct Credentials: Codable, Equatable {
    var username: String
    var password: String
    var created: Date
    var tags: [String]
}

/// The test target's directory, found through `#filePath`.
let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

/// The package root.
let packageRoot = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()

/// Lowercase hex of bytes.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Bytes of a hex string (whitespace ignored).
func bytes(hex text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// The archive envelope around a bare CBOR item given in hex.
func archive(_ itemHex: String) -> [UInt8] {
    CBORWriter.envelope + bytes(hex: itemHex)
}

/// Decoding must fail with a `DecodingError.dataCorrupted` (or another DecodingError if `anyKind`) whose
/// description contains `message`; returns the error's coding path.
@discardableResult
func expectRejected<T: Decodable>(
    _ type: T.Type,
    _ input: [UInt8],
    _ message: String,
    options: VaultArchive.Options = .init(),
    sourceLocation: SourceLocation = #_sourceLocation
) -> [any CodingKey] {
    do {
        _ = try VaultArchive.decode(T.self, from: input, options: options)
        Issue.record("decoded \(hex(input)) as \(T.self) but expected: \(message)", sourceLocation: sourceLocation)
    } catch let error as DecodingError {
        let context: DecodingError.Context
        switch error {
        case .dataCorrupted(let c), .typeMismatch(_, let c), .keyNotFound(_, let c), .valueNotFound(_, let c):
            context = c
        @unknown default:
            Issue.record("unknown DecodingError \(error)", sourceLocation: sourceLocation)
            return []
        }
        #expect(
            context.debugDescription.contains(message),
            "\(context.debugDescription) does not mention \(message)",
            sourceLocation: sourceLocation
        )
        return context.codingPath
    } catch {
        Issue.record("expected a DecodingError, got \(error)", sourceLocation: sourceLocation)
    }
    return []
}

/// Path as dotted text, e.g. "a.Index 1.b".
func pathText(_ path: [any CodingKey]) -> String {
    path.map(\.stringValue).joined(separator: ".")
}
