import Foundation
import OrchardTesting
import Testing

/// docs/architecture.md's claims that the code can check: its table of targets is Package.swift's,
/// and the HTTP server only wires the services the composition root made.
@Suite("Architecture: the document's claims hold")
struct ArchitectureDocumentTests {
    static func read(_ path: String) throws -> String {
        try String(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// Every target Package.swift declares (the tools behind ORCHARD_TOOLS included), tests aside.
    static func declaredTargets() throws -> Set<String> {
        let manifest = try read("Package.swift")
        let declaration = /\.(?:target|executableTarget|systemLibrary|plugin)\(\s*name: "([^"]+)"/
        return Set(manifest.matches(of: declaration).map { String($0.output.1) })
    }

    /// The targets the document's table names: each backticked name in the first column of
    /// "## The targets".
    static func documentedTargets() throws -> Set<String> {
        let document = try read("docs/architecture.md")
        let section = try #require(document.split(separator: "\n## ").first { $0.hasPrefix("The targets") })
        var names: Set<String> = []
        for row in section.split(separator: "\n") where row.hasPrefix("| `") {
            let cell = row.dropFirst(2).prefix { $0 != "|" }
            names.formUnion(cell.matches(of: /`([^`]+)`/).map { String($0.output.1) })
        }
        return names
    }

    @Test("the table of targets names every target Package.swift declares, and no other")
    func targetsTable() throws {
        let declared = try Self.declaredTargets()
        let documented = try Self.documentedTargets()
        #expect(declared.count > 25 && declared.contains("OrchardComposition"), "\(declared.sorted())")
        #expect(declared.subtracting(documented).sorted() == [], "targets the document does not describe")
        #expect(documented.subtracting(declared).sorted() == [], "targets the document names that Package.swift lacks")
    }

    /// The services the composition root makes; the server is handed them.
    static let services = [
        "PaymentsEngine", "MandateLifecycle", "OrderService", "QuoteClient", "PaymentRequestService", "MandateChargeService",
        "TenantRetirement", "MerchantRegistryService", "WebhookDispatcher", "TokenEventFetcher", "GuardService",
    ]

    @Test("the HTTP server makes no service: buildRouter only wires what the composition root made")
    func serverOnlyWires() throws {
        let made = try Regex("\\b(\(Self.services.joined(separator: "|")))\\(")
        let files = try LayeringTests.sources(of: "OrchardServer")
        #expect(files.contains { $0.file == "Application+build.swift" })
        for (file, lines) in files {
            for line in lines where !line.drop(while: { $0 == " " }).hasPrefix("//") && line.contains(made) {
                Issue.record("OrchardServer/\(file) makes a service: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        let root = try LayeringTests.sources(of: "OrchardComposition").flatMap(\.lines).joined(separator: "\n")
        for service in Self.services where service != "PaymentsEngine" {  // made by the configuration it reads (makePaymentsEngine)
            #expect(root.contains("\(service)("), "the composition root makes \(service)")
        }
    }
}
