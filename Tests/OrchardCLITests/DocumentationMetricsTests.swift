import Foundation
import OrchardTesting
import Testing

/// docs/monitoring.md lists the metric series the code defines, no more and no fewer.
@Suite("Documentation metrics")
struct DocumentationMetricsTests {
    static let root = OrchardProcess.repositoryRoot

    /// Every `"orchard_…"` string literal in `Sources/`: the labels metrics are recorded under.
    static func seriesInSources() throws -> Set<String> {
        var names: Set<String> = []
        let files = FileManager.default.enumerator(at: root.appendingPathComponent("Sources"), includingPropertiesForKeys: nil)
        for case let url as URL in try #require(files) where url.pathExtension == "swift" {
            names.formUnion(series(in: try String(contentsOf: url, encoding: .utf8), quoted: true))
        }
        return names
    }

    /// The `orchard_…` names in `text`: quoted ones (a Swift literal) or in backticks (Markdown).
    static func series(in text: String, quoted: Bool) -> Set<String> {
        let delimiter: Character = quoted ? "\"" : "`"
        var names: Set<String> = []
        for piece in text.split(separator: delimiter, omittingEmptySubsequences: false).dropFirst() where piece.hasPrefix("orchard_") {
            if piece.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" }) { names.insert(String(piece)) }
        }
        return names
    }

    /// The first cells of the metrics table (`| series | labels | what it counts |`).
    static func documentedSeries() throws -> Set<String> {
        let text = try String(contentsOf: root.appendingPathComponent("docs/monitoring.md"), encoding: .utf8)
        var names: Set<String> = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `orchard_") {
            let cell = line.split(separator: "|")[0]
            names.formUnion(series(in: String(cell), quoted: false))
        }
        return names
    }

    @Test("the metrics table of docs/monitoring.md names each series the code records, and only those")
    func metricsTable() throws {
        let code = try Self.seriesInSources()
        let documented = try Self.documentedSeries()
        #expect(code.count > 15, "the series were found in Sources/ (\(code.count))")
        for name in code.subtracting(documented).sorted() { Issue.record("docs/monitoring.md does not list \(name)") }
        for name in documented.subtracting(code).sorted() { Issue.record("docs/monitoring.md lists \(name), which no code records") }
    }

    @Test("the name finder reads Swift literals and Markdown cells, and nothing else")
    func finder() {
        #expect(
            Self.series(in: #"Counter(label: "orchard_a_total", x: "orchard_b.h", "other")"#, quoted: true) == ["orchard_a_total"])
        #expect(Self.series(in: "| `orchard_c_seconds` | `route` |", quoted: false) == ["orchard_c_seconds"])
    }
}
