import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServices
import OrchardTesting
import ProcessorClients
import Testing

/// docs/configuration.md (with docs/configuration-server.md) and the loader agree, both ways: every key the loader reads is
/// documented with its type, and every documented key is one the loader reads.
@Suite("Configuration reference")
struct ConfigurationReferenceTests {
    /// A documented key: its path as written (`<name>` stands for any one segment) and its type cell.
    struct DocumentedKey: Equatable {
        var path: String
        var type: String

        /// Whether `key` is this entry's path, or one of the paths its `<name>` segments stand for.
        func matches(_ key: String) -> Bool {
            let pattern = path.split(separator: ".", omittingEmptySubsequences: false)
            let segments = key.split(separator: ".", omittingEmptySubsequences: false)
            guard pattern.count == segments.count else { return false }
            return zip(pattern, segments).allSatisfy { wanted, segment in
                (wanted.hasPrefix("<") && wanted.hasSuffix(">") && !segment.contains("[")) || wanted == segment
            }
        }
    }

    /// The rows of the tables headed `| key | type | default | meaning |`.
    static func documented(_ text: String) -> [DocumentedKey] {
        var keys: [DocumentedKey] = []
        var inTable = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            guard line.hasPrefix("|") else {
                inTable = false
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if cells.starts(with: ["key", "type", "default", "meaning"]) {
                inTable = true
                continue
            }
            guard inTable, cells.count >= 4, cells[0].hasPrefix("`"), cells[0].hasSuffix("`"), cells[0].count > 2 else { continue }
            keys.append(DocumentedKey(path: String(cells[0].dropFirst().dropLast()), type: cells[1]))
        }
        return keys
    }

    /// What the loader reads: the file's keys from its own decoding, and each processor driver's keys.
    static func accepted() throws -> [String: DecodedKeys.Shape?] {
        var keys: [String: DecodedKeys.Shape?] = try DecodedKeys.of(ConfigurationFile.self).mapValues { $0 }
        for driver in ProcessorFactory.drivers {
            for key in driver.keys where keys["merchants[].processor.\(key)"] == nil {
                keys["merchants[].processor.\(key)"] = .some(nil)
            }
        }
        return keys
    }

    /// What is wrong between a reference and the accepted keys, one line each; empty when they agree.
    static func disagreements(reference: [DocumentedKey], accepted: [String: DecodedKeys.Shape?]) -> [String] {
        var problems: [String] = []
        for (key, shape) in accepted.sorted(by: { $0.key < $1.key }) {
            let rows = reference.filter { $0.matches(key) }
            if rows.isEmpty {
                problems.append("\(key) (\(shape?.rawValue ?? "processor key")) is read by the loader but not documented")
            }
            for row in rows {
                if let shape, row.type != shape.rawValue {
                    problems.append("\(row.path) is documented as \(row.type.debugDescription), but the loader reads \(shape.rawValue)")
                }
            }
        }
        for row in reference where !accepted.keys.contains(where: row.matches) {
            problems.append("\(row.path) is documented but the loader does not read it")
        }
        for (index, row) in reference.enumerated() where reference[..<index].contains(where: { $0.path == row.path }) {
            problems.append("\(row.path) is documented twice")
        }
        return problems
    }

    /// The reference's pages: the merchants, payments and checkout keys, then the server, store and observability keys.
    static let pages = ["docs/configuration.md", "docs/configuration-server.md"]

    /// The reference's pages, one after the other (a table never spans two pages).
    static func reference() throws -> String {
        try pages.map { try String(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
    }

    @Test("docs/configuration.md and docs/configuration-server.md document every key the loader reads, with its type, and no other")
    func referenceMatchesLoader() throws {
        let reference = Self.documented(try Self.reference())
        let accepted = try Self.accepted()
        #expect(accepted.count > 100, "the loader's keys were found (\(accepted.count))")
        #expect(accepted["server.host"] == .some(.string))
        #expect(accepted["merchants[].processingKeys"] == .some(.listOfObjects))
        #expect(accepted["merchants[].processor.secretApiKey"] != nil)
        for problem in Self.disagreements(reference: reference, accepted: accepted) {
            Issue.record("docs/configuration*.md: \(problem)")
        }
    }

    @Test("the check fails for a key missing from the reference, for a key the loader does not read, and for a wrong type")
    func checkCanFail() throws {
        let reference = Self.documented(try Self.reference())
        let accepted = try Self.accepted()
        #expect(Self.disagreements(reference: reference, accepted: accepted).isEmpty)

        let withoutHost = reference.filter { $0.path != "server.host" }
        #expect(withoutHost.count == reference.count - 1)
        #expect(
            Self.disagreements(reference: withoutHost, accepted: accepted) == [
                "server.host (string) is read by the loader but not documented"
            ])

        var newKey = accepted
        newKey["server.newSetting"] = .some(.integer)
        #expect(
            Self.disagreements(reference: reference, accepted: newKey) == [
                "server.newSetting (integer) is read by the loader but not documented"
            ])

        var removedKey = accepted
        removedKey["webhooks.retryHours"] = nil
        #expect(
            Self.disagreements(reference: reference, accepted: removedKey) == [
                "webhooks.retryHours is documented but the loader does not read it"
            ])

        let retyped = reference.map { $0.path == "server.port" ? DocumentedKey(path: $0.path, type: "string") : $0 }
        #expect(
            Self.disagreements(reference: retyped, accepted: accepted) == [
                "server.port is documented as \"string\", but the loader reads integer"
            ])
    }

    @Test("the decoded keys follow the decoding code: a section's strict keys, lists and nested objects")
    func decodedKeys() throws {
        struct Inner: Decodable {
            var a: Int?
            var b: [String]
        }
        struct Outer: Decodable {
            var name: String
            var items: [Inner]?
            var flag: Bool?
        }
        #expect(
            try DecodedKeys.of(Outer.self) == [
                "name": .string, "items": .listOfObjects, "items[].a": .integer, "items[].b": .listOfStrings, "flag": .boolean,
            ])
    }
}
