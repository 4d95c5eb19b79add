import Foundation
import OrchardTesting
import Testing

/// Config/prometheus's alert rules and Config/grafana's dashboard: promtool checks the rules and runs
/// their unit tests, and every series they name is one Orchard records (docs/monitoring.md's table)
/// or one of the guard's.
@Suite("Alert rules and dashboard")
struct AlertRulesTests {
    static let root = OrchardProcess.repositoryRoot
    static let rules = root.appendingPathComponent("Config/prometheus/orchard-alerts.yml")
    static let ruleTests = root.appendingPathComponent("Config/prometheus/orchard-alerts.test.yml")
    static let dashboard = root.appendingPathComponent("Config/grafana/orchard-dashboard.json")

    /// Debian's `prometheus` package installs it there.
    static var promtool: String? {
        ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("promtool accepts the rules and their unit tests pass")
    func promtoolPasses() async throws {
        guard let promtool = Self.promtool else {
            Issue.record("promtool is not installed: scripts/test installs it (or apt-get install prometheus)")
            return
        }
        let folder = Self.rules.deletingLastPathComponent()
        for arguments in [["check", "rules", Self.rules.path], ["test", "rules", Self.ruleTests.path]] {
            let result = try await OrchardProcess.run(arguments, executable: URL(fileURLWithPath: promtool), currentDirectory: folder)
            let output = String(decoding: result.stdout, as: UTF8.self) + result.stderr
            #expect(result.status == 0, "promtool \(arguments.joined(separator: " ")):\n\(output)")
            #expect(output.contains("SUCCESS"), "\(output)")
        }
    }

    @Test("each alert has a summary and a description, and a unit test that sees it fire")
    func everyAlertTested() throws {
        let rules = try String(contentsOf: Self.rules, encoding: .utf8)
        let tests = try String(contentsOf: Self.ruleTests, encoding: .utf8)
        let blocks = rules.components(separatedBy: "- alert: ").dropFirst()
        #expect(blocks.count >= 10, "the alerts were found (\(blocks.count))")
        for block in blocks {
            let name = String(block.prefix { !$0.isNewline })
            #expect(block.contains("summary: ") && block.contains("description: "), "\(name) needs a summary and a description")
            #expect(
                tests.contains("alertname: \(name)\n    exp_alerts:\n    - exp_labels:"),
                "\(name): no unit test in orchard-alerts.test.yml expects it to fire")
        }
    }

    @Test("the dashboard is JSON with panels, each with a query")
    func dashboardParses() throws {
        let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: Self.dashboard)) as? [String: Any]
        let panels = try #require(json?["panels"] as? [[String: Any]])
        let queried = panels.filter { $0["type"] as? String != "row" }
        #expect(queried.count >= 10)
        for panel in queried {
            let targets = panel["targets"] as? [[String: Any]] ?? []
            #expect(
                !targets.isEmpty && targets.allSatisfy { ($0["expr"] as? String)?.contains("orchard_") == true }, "\(panel["title"] ?? "")")
        }
    }

    @Test("promtool accepts every dashboard query as PromQL, and refuses a broken one")
    func dashboardQueriesParse() async throws {
        let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: Self.dashboard)) as? [String: Any]
        let panels = try #require(json?["panels"] as? [[String: Any]])
        let queries = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        #expect(queries.count >= 10)
        let checked = try await Self.promtoolCheck(queries)
        #expect(checked?.status == 0, "promtool check rules on the dashboard's queries:\n\(checked?.output ?? "")")
        #expect(checked?.output.contains("SUCCESS: \(queries.count) rules found") == true, "\(checked?.output ?? "")")
        let broken = try await Self.promtoolCheck(["sum(rate(orchard_http_requests_total[$__rate_interval])"])
        #expect(broken.map { $0.status != 0 } ?? true, "an unbalanced parenthesis is refused")
    }

    /// `promtool check rules` on a rules file recording each of `queries` (Grafana's interval
    /// variables as 5m; any other variable is left for promtool to refuse); nil without promtool.
    static func promtoolCheck(_ queries: [String]) async throws -> (status: Int32, output: String)? {
        guard let promtool else {
            Issue.record("promtool is not installed: scripts/test installs it (or apt-get install prometheus)")
            return nil
        }
        let rules = queries.enumerated().map { index, query in
            var expression = query
            for variable in ["$__rate_interval", "$__interval", "$__range"] {
                expression = expression.replacingOccurrences(of: variable, with: "5m")
            }
            return ["record": "dashboard:query_\(index)", "expr": expression]
        }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // JSON is YAML: promtool reads it as a rules file.
        let file = directory.path("dashboard-queries.yml")
        // Without `\/`, an escape YAML does not have.
        try JSONSerialization.data(withJSONObject: ["groups": [["name": "dashboard", "rules": rules]]], options: .withoutEscapingSlashes)
            .write(to: URL(fileURLWithPath: file))
        let result = try await OrchardProcess.run(["check", "rules", file], executable: URL(fileURLWithPath: promtool))
        return (result.status, String(decoding: result.stdout, as: UTF8.self) + result.stderr)
    }

    @Test("every series the rules, their tests and the dashboard name is recorded by Orchard (or is the guard's)")
    func seriesAreKnown() throws {
        let known = try DocumentationMetricsTests.documentedSeries()
        var named: Set<String> = []
        for file in [Self.rules, Self.ruleTests, Self.dashboard] {
            let found = Self.series(in: try String(contentsOf: file, encoding: .utf8))
            #expect(!found.isEmpty, "\(file.lastPathComponent) names series")
            for name in found where !Self.recorded(name, known: known) {
                Issue.record("\(file.lastPathComponent) names \(name), which docs/monitoring.md's metrics table does not list")
            }
            named.formUnion(found)
        }
        for series in [
            "orchard_payments_unknown_oldest_age_seconds", "orchard_webhook_oldest_pending_age_seconds", "orchard_guard_failing",
        ] {
            #expect(named.contains(series))
        }
    }

    @Test("the series finder reads names in expressions and histogram suffixes only on known series")
    func finder() {
        #expect(Self.series(in: #"rate(orchard_a_total{x="orchard-b"}[5m]) / OrchardAlert"#) == ["orchard_a_total"])
        let known: Set<String> = ["orchard_d_seconds"]
        #expect(Self.recorded("orchard_d_seconds_bucket", known: known) && Self.recorded("orchard_d_seconds_count", known: known))
        #expect(!Self.recorded("orchard_d_total", known: known) && !Self.recorded("orchard_e_seconds_count", known: known))
    }

    /// Every `orchard_…` name in `text`.
    static func series(in text: String) -> Set<String> {
        var names: Set<String> = []
        var rest = Substring(text)
        while let start = rest.range(of: "orchard_") {
            let name = rest[start.lowerBound...].prefix { $0.isLowercase || $0.isNumber || $0 == "_" }
            names.insert(String(name))
            rest = rest[name.endIndex...]
        }
        return names
    }

    /// A recorded series, or a histogram's `_bucket`, `_count` or `_sum` of one.
    static func recorded(_ name: String, known: Set<String>) -> Bool {
        if known.contains(name) { return true }
        return ["_bucket", "_count", "_sum"].contains { suffix in
            name.hasSuffix(suffix) && known.contains(String(name.dropLast(suffix.count)))
        }
    }
}
