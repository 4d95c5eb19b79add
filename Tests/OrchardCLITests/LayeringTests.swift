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

    static func imports(of target: String) throws -> [(file: String, module: String)] {
        let folder = OrchardProcess.repositoryRoot.appendingPathComponent("Sources/\(target)")
        var found: [(String, String)] = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        for case let url as URL in try #require(files) where url.pathExtension == "swift" {
            for line in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where line.hasPrefix("import ") {
                found.append((url.lastPathComponent, String(line.dropFirst("import ".count))))
            }
        }
        return found
    }

    @Test("no target imports a module above it or beside it", arguments: forbidden.keys.sorted())
    func direction(target: String) throws {
        let imports = try Self.imports(of: target)
        #expect(!imports.isEmpty, "Sources/\(target) has Swift files")
        for (file, module) in imports where Self.forbidden[target, default: []].contains(module) {
            Issue.record("\(target)/\(file) imports \(module)")
        }
    }
}
