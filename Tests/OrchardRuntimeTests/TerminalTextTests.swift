import Foundation
import OrchardRuntime
import Testing

/// Outside text shown by the command line: escape sequences shown, never run.
@Suite("Terminal text")
struct TerminalTextTests {
    @Test("C0, DEL, C1, the separators and the bidirectional controls are shown as escapes; everything else is kept")
    func escaped() {
        #expect(TerminalText.escaped("plain text, é, 日本 and 🍏 \\e") == "plain text, é, 日本 and 🍏 \\e")
        #expect(TerminalText.escaped("a\nb\r\tc") == #"a\nb\r\tc"#)
        #expect(TerminalText.escaped("\u{1B}]0;owned\u{07}\u{1B}[2J") == #"\u{1B}]0;owned\u{7}\u{1B}[2J"#)
        #expect(TerminalText.escaped("\u{0}\u{7F}\u{80}\u{9B}\u{9F}\u{A0}") == #"\u{0}\u{7F}\u{80}\u{9B}\u{9F}"# + "\u{A0}")
        #expect(TerminalText.escaped("x\u{2028}y\u{2029}") == #"x\u{2028}y\u{2029}"#)
        #expect(TerminalText.escaped("\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}") == #"\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}"#)
        #expect(
            TerminalText.escaped("\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{61C}")
                == #"\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{61C}"#)
        // Whatever comes in, nothing unsafe goes out.
        let every = String(String.UnicodeScalarView((0...0x2100).compactMap(Unicode.Scalar.init)))
        #expect(!TerminalText.escaped(every).unicodeScalars.contains(where: TerminalText.isUnsafe))
    }

    @Test("lines of Orchard's own keep their breaks; each line's outside text is escaped")
    func escapedLines() {
        #expect(TerminalText.escapedLines("subject \u{1B}[2J\n  issuer \u{202E}x\n") == "subject \\u{1B}[2J\n  issuer \\u{202E}x\n")
    }

    @Test("JSON keeps meaning the same: what an encoder leaves raw becomes \\uXXXX, and it decodes to the same value")
    func escapedJSON() throws {
        let value = ["name": "Tea \u{9B}31m House\u{202E}\u{2028}\u{7F}", "plain": "é"]
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: [.prettyPrinted, .sortedKeys]), as: UTF8.self)
        let escaped = TerminalText.escapedJSON(json)
        #expect(escaped.contains(#"Tea \u009B31m House\u202E\u2028\u007F"#), "\(escaped)")
        #expect(!escaped.unicodeScalars.contains { TerminalText.isUnsafe($0) && $0 != "\n" })
        let decoded = try JSONSerialization.jsonObject(with: Data(escaped.utf8)) as? [String: String]
        #expect(decoded == value)
        let plain = "{\n  \"name\" : \"Tea House\",\n  \"plain\" : \"é\"\n}"
        #expect(TerminalText.escapedJSON(plain) == plain, "JSON with nothing unsafe is left as it is, line breaks and all")
    }
}
