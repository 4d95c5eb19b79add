import Foundation
import OrchardTesting
import Testing

/// The dependency direction, held on the sources: CLI → server → contracts ← adapters.
@Suite("Layering: what each target may import")
struct LayeringTests {
    /// Modules each target must never import. Only the runtime knows the metrics backend
    /// (Prometheus); everything else records through swift-metrics.
    static let forbidden: [String: Set<String>] = [
        "OrchardCore": [
            "Hummingbird", "CurlClient", "CSQLite", "OrchardSQLite", "AppleGateway", "ProcessorClients", "ShopCallbacks", "OrchardServer",
            "NIOPosix", "Prometheus",
        ],
        "OrchardServer": [
            "CurlClient", "CSQLite", "OrchardSQLite", "AppleGateway", "ProcessorClients", "ShopCallbacks", "OrchardTesting", "NIOSSL",
            "Prometheus",
        ],
        "ShopCallbacks": ["OrchardServer", "Hummingbird", "AppleGateway", "ProcessorClients", "OrchardSQLite", "Prometheus"],
        "AppleGateway": ["OrchardServer", "Hummingbird", "ProcessorClients", "OrchardSQLite", "Prometheus"],
        "ProcessorClients": ["OrchardServer", "Hummingbird", "AppleGateway", "OrchardSQLite", "Prometheus"],
        "OrchardSQLite": ["OrchardServer", "Hummingbird", "CurlClient", "AppleGateway", "ProcessorClients", "Prometheus"],
        "OrchardRuntime": ["OrchardTesting", "NIOSSL"],
        "orchard": ["OrchardTesting", "NIOSSL"],
    ]

    /// Where code may name the whole store: its declaration, and the composition root that opens
    /// it and hands each consumer the repositories that consumer uses.
    static let wholeStoreAllowed: [String: Set<String>] = [
        "OrchardCore": ["Store/OrchardStore.swift"],
        "OrchardServer": ["Application+build.swift", "ApplicationDependencies.swift"],
    ]

    /// Every Swift file of a target: its path inside `Sources/<target>` and its lines.
    static func sources(of target: String) throws -> [(file: String, lines: [Substring])] {
        let folder = OrchardProcess.repositoryRoot.appendingPathComponent("Sources/\(target)").standardizedFileURL
        var found: [(String, [Substring])] = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        for case let url as URL in try #require(files) where url.pathExtension == "swift" {
            let file = String(url.standardizedFileURL.path.dropFirst(folder.path.count + 1))
            found.append((file, try String(contentsOf: url, encoding: .utf8).split(separator: "\n")))
        }
        return found
    }

    static func imports(of target: String) throws -> [(file: String, module: String)] {
        try sources(of: target).flatMap { file, lines in
            lines.filter { $0.hasPrefix("import ") }.map { (file, String($0.dropFirst("import ".count))) }
        }
    }

    @Test("no target imports a module above it or beside it", arguments: forbidden.keys.sorted())
    func direction(target: String) throws {
        let imports = try Self.imports(of: target)
        #expect(!imports.isEmpty, "Sources/\(target) has Swift files")
        for (file, module) in imports where Self.forbidden[target, default: []].contains(module) {
            Issue.record("\(target)/\(file) imports \(module)")
        }
    }

    @Test(
        "only the composition root holds the whole store: every other type names the repositories it uses",
        arguments: wholeStoreAllowed.keys.sorted())
    func repositories(target: String) throws {
        let files = try Self.sources(of: target)
        #expect(files.contains { Self.wholeStoreAllowed[target, default: []].contains($0.file) }, "the allowed files exist")
        for (file, lines) in files where !Self.wholeStoreAllowed[target, default: []].contains(file) {
            for line in lines where !line.drop(while: { $0 == " " }).hasPrefix("//") && line.contains(/\bOrchardStore\b/) {
                Issue.record("\(target)/\(file) names the whole store: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }
}
