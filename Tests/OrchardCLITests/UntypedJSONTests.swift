import Foundation
import OrchardTesting
import Testing

/// Outside input is decoded by type. `JSONSerialization` hands back `Any`, and its
/// `data(withJSONObject:)` traps (a `fatalError`, not a thrown error) on a value it cannot write:
/// one such call on a field a caller chose stopped the whole server for every merchant. So the
/// targets that ship in `orchard serve` use neither; test doubles, tools and the CLI's own files may.
@Suite("No untyped JSON in what the server runs")
struct UntypedJSONTests {
    /// The targets linked into `orchard serve`: everything but the CLI, test doubles and tools.
    static let shipped = [
        "AppleGateway", "ApplePay", "CertificateTools", "CurlClient", "OrchardComposition", "OrchardConfiguration", "OrchardCore",
        "OrchardInMemory",
        "OrchardPostgres", "OrchardRuntime", "OrchardSQLite", "OrchardServer", "OrchardServices", "OrchardTracing", "ProcessorClients",
        "ShopCallbacks", "WalletOrders", "GooglePay",
    ]

    /// Calls that write or read untyped JSON.
    static let untyped = ["JSONSerialization.data(withJSONObject", "JSONSerialization.jsonObject(", "JSONSerialization.writeJSONObject"]

    @Test("no shipped target calls JSONSerialization", arguments: shipped)
    func noUntypedJSON(target: String) throws {
        let files = try LayeringTests.sources(of: target)
        #expect(!files.isEmpty, "\(target) has no sources: is the list current?")
        for (file, lines) in files {
            for line in lines
            where Self.untyped.contains(where: { line.contains($0) }) && !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                Issue.record("\(target)/\(file) uses untyped JSON: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    @Test("the list of shipped targets is every source target but the CLI, test doubles and tools")
    func listIsComplete() throws {
        let sources = OrchardProcess.repositoryRoot.appendingPathComponent("Sources")
        let targets = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { name in
            let files = FileManager.default.enumerator(atPath: sources.appendingPathComponent(name).path)
            return files?.contains { ($0 as? String)?.hasSuffix(".swift") == true } == true
        }
        let exempt: Set<String> = [
            "orchard", "orchard-sandbox", "orchard-bench", "orchard-bench-floor", "TokenBenchmark", "TokenFuzzer", "EmbedFiles",
            "EmbedPublicPlugin", "OrchardTesting", "OrchardServerTesting", "OrchardIntegrationTesting", "OrchardConfigurationTesting",
        ]
        #expect(Set(targets).subtracting(exempt) == Set(Self.shipped))
    }
}
