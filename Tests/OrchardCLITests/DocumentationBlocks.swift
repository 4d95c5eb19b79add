import Foundation
import OrchardTesting

/// The fenced blocks of the README and `docs/`, and the words that mark the ones tests cannot run,
/// as docs/README.md ("How these pages are tested") defines them.
enum DocumentationBlocks {
    /// One fenced block: where it starts, its info string split into language and mark, and its
    /// text with the fence's indentation taken off (a fence inside a list item is indented).
    struct Block: CustomStringConvertible {
        var file: String
        var line: Int
        var language: String
        var words: [String]
        var text: String

        var mark: String? { words.first }
        var description: String { "\(file):\(line) (```\(([language] + words).joined(separator: " ")))" }
    }

    /// A marking word: why tests cannot have such a block, and what in a block shows it needs that
    /// (a block marked with the word must contain one of `signs`, so a word cannot hide a block the
    /// test could run).
    struct Word {
        var reason: String
        var signs: [String]
    }

    /// The pages whose blocks are checked: the README and every page of `docs/`.
    static func pages(root: URL = OrchardProcess.repositoryRoot) throws -> [(name: String, text: String)] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        return try (["README.md"] + docs).map { name in
            (name, try String(contentsOf: root.appendingPathComponent(name), encoding: .utf8))
        }
    }

    static func all(root: URL = OrchardProcess.repositoryRoot) throws -> [Block] {
        try pages(root: root).flatMap { blocks(in: $0.text, file: $0.name) }
    }

    /// Every fenced block of `text`, at any indentation: a fence is three or more backticks or
    /// tildes after spaces, closed by a fence of the same character at least as long.
    static func blocks(in text: String, file: String) -> [Block] {
        var found: [Block] = []
        var open: (indent: Int, fence: String, line: Int, info: [String], body: [String])?
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            let indent = line.prefix { $0 == " " }.count
            let rest = line.dropFirst(indent)
            let marker = rest.first.map { String(repeating: String($0), count: rest.prefix { $0 == "`" || $0 == "~" }.count) } ?? ""
            let isFence = marker.count >= 3 && (marker.allSatisfy { $0 == "`" } || marker.allSatisfy { $0 == "~" })
            if var current = open {
                if isFence, rest.hasPrefix(current.fence), rest.dropFirst(marker.count).allSatisfy(\.isWhitespace) {
                    found.append(
                        Block(
                            file: file, line: current.line, language: current.info.first ?? "", words: Array(current.info.dropFirst()),
                            text: current.body.joined(separator: "\n") + "\n"))
                    open = nil
                } else {
                    // The fence's indentation is not the block's: a line indented less keeps what it has.
                    let drop = min(current.indent, line.prefix { $0 == " " }.count)
                    current.body.append(String(line.dropFirst(drop)))
                    open = current
                }
            } else if isFence {
                let info = rest.dropFirst(marker.count).split(separator: " ").map(String.init)
                open = (indent, marker, index + 1, info, [])
            }
        }
        return found
    }

    /// The vocabulary of marks from docs/README.md's "How these pages are tested": lines
    /// "- `word`: reason; in a block: `sign`, `sign`."
    static func vocabulary(root: URL = OrchardProcess.repositoryRoot) throws -> [String: Word] {
        let page = try String(contentsOf: root.appendingPathComponent("docs/README.md"), encoding: .utf8)
        return vocabulary(in: page)
    }

    static func vocabulary(in page: String) -> [String: Word] {
        guard let start = page.range(of: "## How these pages are tested") else { return [:] }
        let section = page[start.upperBound...].components(separatedBy: "\n## ").first ?? ""
        var words: [String: Word] = [:]
        for line in section.components(separatedBy: "\n") {
            guard let match = line.firstMatch(of: /^- `([a-z][a-z-]*)`: (.+)$/) else { continue }
            let parts = match.2.components(separatedBy: "; in a block: ")
            guard parts.count == 2 else { continue }
            let signs = parts[1].matches(of: /`([^`]+)`/).map { String($0.1) }
            words[String(match.1)] = Word(reason: parts[0], signs: signs)
        }
        return words
    }

    /// The languages a runner of `DocumentationBlocksTests` handles.
    static let runnable: Set<String> = ["sh", "json", "python"]

    /// What is wrong with `block`'s mark, if anything: an unknown word, more than one, an unmarked
    /// block no runner handles, or a mark on a block that shows none of its word's signs.
    static func problem(_ block: Block, vocabulary: [String: Word]) -> String? {
        if block.words.count > 1 { return "\(block) has more than one word after its language" }
        guard let mark = block.mark else {
            return runnable.contains(block.language)
                ? nil : "\(block) is neither sh, json nor python, so no runner takes it: mark it with a word of docs/README.md"
        }
        guard let word = vocabulary[mark] else {
            return "\(block) is marked `\(mark)`, a word docs/README.md (How these pages are tested) does not define"
        }
        if !word.signs.contains(where: block.text.contains) {
            return "\(block) is marked `\(mark)` but shows none of its signs (\(word.signs.joined(separator: ", "))): run it instead"
        }
        return nil
    }
}
