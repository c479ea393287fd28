import Testing
import VaultTestSupport

@testable import VaultCLI

/// The one escaping of user-controlled text, for tab-separated lines, tables and error lines.
@Suite struct OutputTests {
    @Test func theLineBreakingCharactersKeepTheirShortEscapes() {
        #expect(Output.escape("a\\b\tc\nd\re") == "a\\\\b\\tc\\nd\\re")
    }

    @Test func otherControlCharactersAreEscapedByCodePoint() {
        #expect(Output.escape("\u{0}\u{1}\u{1B}\u{1F}\u{7F}") == "\\x00\\x01\\x1b\\x1f\\x7f")
        #expect(Output.escape("\u{80}\u{9B}\u{9F}") == "\\u{80}\\u{9b}\\u{9f}")
        let bidi = "\u{200E}\u{200F}\u{061C}\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}"
        #expect(
            Output.escape(bidi)
                == "\\u{200e}\\u{200f}\\u{61c}\\u{202a}\\u{202b}\\u{202c}\\u{202d}\\u{202e}"
                + "\\u{2066}\\u{2067}\\u{2068}\\u{2069}")
    }

    @Test func aLongQuotedNameInsideAnErrorMessageIsCut() {
        let long = String(repeating: "n", count: 4_096)
        let line = CLIError(.locked, "add", "cannot add service \"\(long)\", account \"a\": the vault is locked").line
        #expect(line.count < 400, "\(line.count)")
        #expect(
            line.contains("service \"\(String(repeating: "n", count: 200))… (4096 bytes)\", account \"a\": the vault"))
        // Short names, and an unpaired quote, stay as they are.
        #expect(CLIError.boundingQuotedNames("service \"db\", account \"app\"") == "service \"db\", account \"app\"")
        #expect(CLIError.boundingQuotedNames("a \"b") == "a \"b")
    }

    @Test func printableTextIsKeptAsIs() {
        let text = "café – 東京 🔑 \"quoted\" ~ \u{A0}\u{2070}"
        #expect(Output.escape(text) == text)
    }

    @Test func aLiteralBackslashSequenceIsNotMistakenForAnEscape() {
        // The text `\x1b` (four characters) and an ESC character print differently.
        #expect(Output.escape("\\x1b") == "\\\\x1b")
        #expect(Output.escape("\u{1B}") == "\\x1b")
        #expect(Output.escape("\\u{9b}") == "\\\\u{9b}")
    }

    @Test func tablesEscapeTheirCellsAndAlignOnTheEscapedText() {
        let table = Output.table(header: ["A", "B"], [["x\u{1B}y", "z"], ["w", "v\u{9B}"]])
        #expect(table == "A       B\nx\\x1by  z\nw       v\\u{9b}\n")
    }

    @Test func tabSeparatedLinesEscapeTheirFields() {
        #expect(Output.tabSeparated([["a\u{1B}", "b\tc"]]) == "a\\x1b\tb\\tc\n")
    }

    @Test func errorLinesEscapeSubjectAndMessage() {
        let error = CLIError(.notFound, "service \"a\u{1B}[2J\"", "not found\u{202E} here\nnow")
        #expect(error.line == "vault: service \"a\\x1b[2J\": not found\\u{202e} here\\nnow\n")
    }
}
