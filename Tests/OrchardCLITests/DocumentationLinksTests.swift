import Foundation
import OrchardTesting
import Testing

/// The README and docs/ link to each other by relative links: each must reach a file that
/// exists and, with a `#fragment`, a heading of that file.
@Suite("Documentation links")
struct DocumentationLinksTests {
    static let root = OrchardProcess.repositoryRoot

    /// README.md and every page of docs/, as paths from the repository's root.
    static func pages() throws -> [String] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
        return ["README.md"] + docs.filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
    }

    /// The lines outside fenced code blocks.
    static func prose(_ text: String) -> [Substring] {
        var inCode = false
        return text.split(separator: "\n", omittingEmptySubsequences: false).filter { line in
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inCode.toggle()
                return false
            }
            return !inCode
        }
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, and
    /// `-1`, `-2`… for repeats.
    static func anchors(_ text: String) -> Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        for line in prose(text) where line.hasPrefix("#") {
            let title = line.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)
            var slug = ""
            for character in title.lowercased() {
                if character.isLetter || character.isNumber || character == "-" || character == "_" {
                    slug.append(character)
                } else if character == " " {
                    slug.append("-")
                }
            }
            let count = seen[slug, default: 0]
            seen[slug] = count + 1
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
        }
        return anchors
    }

    /// The targets of `[text](target)` links and images, without external ones.
    static func relativeLinks(_ text: String) -> [String] {
        var links: [String] = []
        for line in prose(text) {
            var rest = line[...]
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                let target = String(after[..<close])
                rest = after[close...]
                if target.contains("://") || target.hasPrefix("mailto:") || target.contains(" ") { continue }
                links.append(target)
            }
        }
        return links
    }

    /// Each broken link of `text`, the page at `page`, as a line naming it.
    static func brokenLinks(in text: String, page: String) throws -> [String] {
        let folder = (page as NSString).deletingLastPathComponent
        var broken: [String] = []
        for link in relativeLinks(text) {
            let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let file = String(parts[0])
            let target = file.isEmpty ? page : ((folder as NSString).appendingPathComponent(file) as NSString).standardizingPath
            let url = root.appendingPathComponent(target)
            guard FileManager.default.fileExists(atPath: url.path) else {
                broken.append("\(page): \(link): no file \(target)")
                continue
            }
            guard parts.count == 2 else { continue }
            let anchor = String(parts[1])
            guard target.hasSuffix(".md") else {
                broken.append("\(page): \(link): a fragment on a file that is not Markdown")
                continue
            }
            if !anchors(try String(contentsOf: url, encoding: .utf8)).contains(anchor) {
                broken.append("\(page): \(link): \(target) has no heading #\(anchor)")
            }
        }
        return broken
    }

    @Test("every relative link of README.md and docs/ reaches an existing file and heading")
    func links() throws {
        let pages = try Self.pages()
        #expect(pages.count > 5, "docs/ holds the documentation")
        var total = 0
        for page in pages {
            let text = try String(contentsOf: Self.root.appendingPathComponent(page), encoding: .utf8)
            total += Self.relativeLinks(text).count
            for problem in try Self.brokenLinks(in: text, page: page) { Issue.record("\(problem)") }
        }
        #expect(total > 20, "the pages link to each other (\(total) links)")
    }

    @Test("the check knows GitHub's anchors and finds a broken link")
    func checkCanFail() throws {
        #expect(
            Self.anchors(
                "# Payment states and the money path\n## Limits, and behaviour\n## Limits, and behaviour\n```\n# not a heading\n```")
                == ["payment-states-and-the-money-path", "limits-and-behaviour", "limits-and-behaviour-1"])
        #expect(Self.relativeLinks("see [a](b.md#c) and [d](https://e.example)\n```\n[f](g.md)\n```") == ["b.md#c"])
        let page =
            "[ok](../README.md) [states](payment-states.md#payment-states) [gone](missing.md) [nowhere](payment-states.md#no-such-heading)"
        #expect(
            try Self.brokenLinks(in: page, page: "docs/example.md") == [
                "docs/example.md: missing.md: no file docs/missing.md",
                "docs/example.md: payment-states.md#no-such-heading: docs/payment-states.md has no heading #no-such-heading",
            ])
    }
}
