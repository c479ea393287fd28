/// A configuration file template for `vault inject`: text copied as it is, and placeholders
/// `{{ REFERENCE }}` (`SecretReference`) replaced by secrets. Nothing else is evaluated. `\{{` writes a
/// literal `{{`; inside a placeholder a backslash takes the next character as it is, so a name that
/// holds `}}` is written `\}\}`; spaces and tabs around the reference are ignored.
struct Template {
    /// A piece of the template.
    enum Piece: Equatable {
        /// Bytes copied as they are.
        case text([UInt8])
        /// A placeholder, with the line it starts on.
        case secret(SecretReference, line: Int)
    }

    /// The pieces, in order.
    let pieces: [Piece]

    /// The distinct references, in the order they first appear.
    var references: [SecretReference] {
        var seen = Set<SecretReference>()
        var result: [SecretReference] = []
        for case .secret(let reference, _) in pieces where seen.insert(reference).inserted {
            result.append(reference)
        }
        return result
    }

    /// Parses `bytes`; an error names `source` (the template's path) and the line.
    init(_ bytes: [UInt8], source: String) throws(UsageError) {
        let open = UInt8(ascii: "{")
        let close = UInt8(ascii: "}")
        let backslash = UInt8(ascii: "\\")
        let newline = UInt8(ascii: "\n")
        var pieces: [Piece] = []
        var text: [UInt8] = []
        var line = 1
        var index = 0
        func at(_ offset: Int) -> UInt8? { offset < bytes.count ? bytes[offset] : nil }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == backslash, at(index + 1) == open, at(index + 2) == open {
                text += [open, open]
                index += 3
                continue
            }
            guard byte == open, at(index + 1) == open else {
                if byte == newline { line += 1 }
                text.append(byte)
                index += 1
                continue
            }
            let startLine = line
            index += 2
            var reference: [UInt8] = []
            // Where the reference's last escaped character ends: blanks up to there are part of the name.
            var escapedEnd = 0
            var closed = false
            while index < bytes.count {
                let inner = bytes[index]
                if inner == newline { break }
                if inner == backslash, let next = at(index + 1), next != newline {
                    reference += [inner, next]
                    escapedEnd = reference.count
                    index += 2
                    continue
                }
                if inner == close, at(index + 1) == close {
                    index += 2
                    closed = true
                    break
                }
                reference.append(inner)
                index += 1
            }
            guard closed else {
                throw UsageError(
                    "\(source), line \(startLine): a placeholder opened with {{ is not closed with }} on its line")
            }
            let trimmed = Self.trimmingBlanks(reference, keepingUpTo: escapedEnd)
            guard let written = String(validating: trimmed, as: UTF8.self), !written.isEmpty else {
                throw UsageError(
                    "\(source), line \(startLine): a placeholder needs a secret, as {{ SERVICE/ACCOUNT }}, in UTF-8")
            }
            let parsed: SecretReference
            do {
                parsed = try SecretReference(written)
            } catch {
                throw UsageError("\(source), line \(startLine): \(error.message)")
            }
            if !text.isEmpty { pieces.append(.text(text)) }
            text = []
            pieces.append(.secret(parsed, line: startLine))
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    /// `bytes` without the spaces and tabs at either end, but none before `kept` (the end of the last
    /// escaped character: an escaped blank, `\ `, is part of the name).
    private static func trimmingBlanks(_ bytes: [UInt8], keepingUpTo kept: Int) -> [UInt8] {
        let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        var end = bytes.count
        while end > kept, blank(bytes[end - 1]) { end -= 1 }
        var start = 0
        while start < end, blank(bytes[start]) { start += 1 }
        return Array(bytes[start..<end])
    }

    /// The rendered bytes, with each placeholder's secret from `secrets`.
    func render(_ secrets: [SecretReference: [UInt8]]) -> [UInt8] {
        // Sized once: a growing array would leave copies of secrets behind in the memory it frees.
        var size = 0
        for piece in pieces {
            switch piece {
            case .text(let bytes): size += bytes.count
            case .secret(let reference, _): size += secrets[reference]?.count ?? 0
            }
        }
        var output: [UInt8] = []
        output.reserveCapacity(size)
        for piece in pieces {
            switch piece {
            case .text(let bytes): output += bytes
            case .secret(let reference, _): output += secrets[reference] ?? []
            }
        }
        return output
    }
}
