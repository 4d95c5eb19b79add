/// Outside text (a domain's headers, a shop's or a processor's answer, Apple's message, a
/// tenant's name) made safe for a terminal or a line-oriented log: whatever could drive the
/// terminal, forge a line or reorder what is shown is written as a visible escape instead.
public enum TerminalText {
    /// `text` with every unsafe character escaped: `\n`, `\r`, `\t`, and `\u{1B}`-style for the
    /// rest of C0, DEL, C1, the line and paragraph separators and the bidirectional marks. The
    /// same string when there is none, which is nearly always.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isUnsafe(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Lines of Orchard's own making (kept as they are) with outside text in them: each line's
    /// unsafe characters escaped, the line breaks between them kept.
    public static func escapedLines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { escaped(String($0)) }.joined(separator: "\n")
    }

    /// JSON text for a terminal: the characters a JSON encoder leaves as they are (DEL, C1, the
    /// separators, the bidirectional controls) written as `\uXXXX`, which is the same JSON. C0
    /// never appears raw in JSON; outside strings none of these can appear at all.
    public static func escapedJSON(_ json: String) -> String {
        guard json.unicodeScalars.contains(where: isUnsafe) else { return json }
        var out = ""
        out.reserveCapacity(json.utf8.count + 8)
        for scalar in json.unicodeScalars {
            guard isUnsafe(scalar) else {
                out.unicodeScalars.append(scalar)
                continue
            }
            switch scalar {
            // JSON's own white space between tokens.
            case "\n", "\r", "\t": out.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            }
        }
        return out
    }

    /// C0, DEL, C1, U+2028 and U+2029, and the bidirectional marks, embeddings, overrides and
    /// isolates (U+061C, U+200E–200F, U+202A–202E, U+2066–2069), which reorder what a terminal shows.
    public static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x061C, 0x200E...0x200F, 0x2028...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
