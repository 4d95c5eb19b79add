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
        // Routes, middleware, the request context and the response mapping: handed its settings and
        // services, it never loads a configuration.
        "OrchardServer": [
            "CurlClient", "CSQLite", "OrchardSQLite", "AppleGateway", "ProcessorClients", "ShopCallbacks", "OrchardTesting", "NIOSSL",
            "Prometheus", "OrchardConfiguration", "OrchardRuntime", "CertificateTools",
        ],
        // What runs beside the routes: no HTTP server, no configuration file, no adapter.
        "OrchardServices": [
            "Hummingbird", "HummingbirdCore", "HTTPTypes", "OrchardServer", "OrchardConfiguration", "OrchardRuntime", "CurlClient",
            "CSQLite", "OrchardSQLite", "OrchardPostgres", "AppleGateway", "ProcessorClients", "ShopCallbacks", "OrchardTesting",
            "Prometheus", "NIOPosix",
        ],
        // The configuration file and what it makes: below the composition root, beside the server.
        "OrchardConfiguration": [
            "Hummingbird", "HummingbirdCore", "HTTPTypes", "OrchardServer", "OrchardRuntime", "CurlClient", "CSQLite", "OrchardSQLite",
            "OrchardPostgres", "AppleGateway", "ProcessorClients", "ShopCallbacks", "OrchardTesting", "Prometheus",
        ],
        "ShopCallbacks": ["OrchardServer", "Hummingbird", "AppleGateway", "ProcessorClients", "OrchardSQLite", "Prometheus"],
        "AppleGateway": ["OrchardServer", "Hummingbird", "ProcessorClients", "OrchardSQLite", "Prometheus"],
        "ProcessorClients": ["OrchardServer", "Hummingbird", "AppleGateway", "OrchardSQLite", "Prometheus"],
        "OrchardSQLite": ["OrchardServer", "Hummingbird", "CurlClient", "AppleGateway", "ProcessorClients", "Prometheus"],
        "OrchardPostgres": [
            "OrchardServer", "Hummingbird", "CurlClient", "CSQLite", "OrchardSQLite", "AppleGateway", "ProcessorClients", "ShopCallbacks",
            "OrchardTesting", "Prometheus",
        ],
        // The pure core and the libraries below the contracts know nothing of Orchard's layers.
        "ApplePay": ["OrchardCore", "OrchardServer", "CurlClient", "Hummingbird", "NIOCore", "NIOPosix", "CSQLite", "OrchardTesting"],
        "CurlClient": ["ApplePay", "OrchardCore", "OrchardServer", "Hummingbird", "NIOPosix", "OrchardTesting"],
        "CertificateTools": ["OrchardCore", "OrchardServer", "CurlClient", "Hummingbird", "OrchardTesting"],
        // The test doubles stand below the server, so Core's tests build no HTTP server.
        "OrchardTesting": ["OrchardServer", "Hummingbird", "HummingbirdCore", "OrchardRuntime", "OrchardSQLite", "OrchardPostgres"],
        // The in-memory store is an adapter like the others: Core's contracts, nothing above them.
        "OrchardInMemory": [
            "Hummingbird", "OrchardServer", "OrchardServices", "OrchardConfiguration", "OrchardRuntime", "OrchardTesting", "CurlClient",
            "CSQLite", "OrchardSQLite", "OrchardPostgres", "NIOCore", "NIOPosix", "Prometheus",
        ],
        // Trace context knows nothing of Orchard: the server and the clients reach it through swift-distributed-tracing.
        "OrchardTracing": ["OrchardCore", "OrchardServer", "CurlClient", "Hummingbird", "ApplePay"],
        "OrchardRuntime": ["OrchardTesting", "OrchardServerTesting", "OrchardConfigurationTesting", "NIOSSL"],
        // The composition root: services made from a configuration and the adapters it is handed.
        "OrchardComposition": [
            "CurlClient", "CSQLite", "OrchardSQLite", "OrchardPostgres", "AppleGateway", "ProcessorClients", "ShopCallbacks",
            "OrchardTesting", "OrchardRuntime", "Prometheus", "NIOPosix",
        ],
        "orchard": ["OrchardTesting", "OrchardServerTesting", "OrchardConfigurationTesting", "NIOSSL"],
        // The test merchant's configuration is below the HTTP server: the configuration's tests use it.
        "OrchardConfigurationTesting": ["Hummingbird", "OrchardServer", "OrchardServerTesting", "OrchardRuntime"],
    ]

    /// What each test target, named after what it tests, must not reach for: a test of Core's rules
    /// runs without sockets or files, the store suites without the HTTP server, an adapter's tests
    /// without the other adapters.
    static let forbiddenInTests: [String: Set<String>] = [
        "OrchardCoreTests": [
            "OrchardServer", "Hummingbird", "HummingbirdTesting", "CurlClient", "OrchardSQLite", "OrchardPostgres", "AppleGateway",
            "ProcessorClients", "ShopCallbacks", "OrchardRuntime", "NIOPosix",
        ],
        "StoreContractTests": [
            "OrchardServer", "Hummingbird", "HummingbirdTesting", "CurlClient", "AppleGateway", "ProcessorClients", "ShopCallbacks",
            "OrchardRuntime",
        ],
        "OrchardSQLiteTests": [
            "OrchardServer", "Hummingbird", "CurlClient", "OrchardPostgres", "AppleGateway", "ProcessorClients", "ShopCallbacks",
            "OrchardRuntime",
        ],
        "OrchardPostgresTests": [
            "OrchardServer", "Hummingbird", "CurlClient", "CSQLite", "OrchardSQLite", "AppleGateway", "ProcessorClients", "ShopCallbacks",
            "OrchardRuntime",
        ],
        "AppleGatewayTests": ["OrchardServer", "OrchardSQLite", "OrchardPostgres", "ProcessorClients", "ShopCallbacks", "OrchardRuntime"],
        "OrchardRuntimeTests": ["orchard"],
        "ProcessorClientsTests": [
            "OrchardServer", "Hummingbird", "HummingbirdTesting", "OrchardSQLite", "OrchardPostgres", "AppleGateway", "ShopCallbacks",
            "OrchardRuntime",
        ],
        // The configuration's and the services' tests run without the HTTP server.
        "OrchardConfigurationTests": [
            "OrchardServer", "Hummingbird", "HummingbirdTesting", "OrchardRuntime", "OrchardSQLite", "OrchardPostgres",
        ],
        "ShopCallbacksTests": ["OrchardServer", "Hummingbird", "AppleGateway", "ProcessorClients", "OrchardSQLite", "OrchardRuntime"],
        // The loops are driven on the in-memory store: no adapter, no server harness.
        "OrchardServicesTests": [
            "OrchardServer", "Hummingbird", "HummingbirdTesting", "OrchardConfiguration", "OrchardRuntime", "OrchardSQLite",
            "OrchardPostgres", "OrchardServerTesting",
        ],
        "CurlClientTests": ["OrchardCore", "OrchardServer", "AppleGateway", "ProcessorClients", "OrchardSQLite", "OrchardPostgres"],
    ]

    /// Where code may name the whole store: its declaration, the ``Repositories`` value made from
    /// it, and the composition root that opens it and hands each consumer the repositories that
    /// consumer uses.
    static let wholeStoreAllowed: [String: Set<String>] = [
        "OrchardCore": ["Store/OrchardStore.swift", "Store/Repositories.swift"],
        // The server is handed `Repositories`, one field per repository: no file of it, nor of the
        // services beside it or the configuration, names the whole store.
        "OrchardServer": [], "OrchardServices": [], "OrchardConfiguration": [],
    ]

    /// Every Swift file of a target: its path inside `<root>/<target>` and its lines.
    static func sources(of target: String, in root: String = "Sources") throws -> [(file: String, lines: [Substring])] {
        let folder = OrchardProcess.repositoryRoot.appendingPathComponent("\(root)/\(target)").standardizedFileURL
        var found: [(String, [Substring])] = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        for case let url as URL in try #require(files) where url.pathExtension == "swift" {
            let file = String(url.standardizedFileURL.path.dropFirst(folder.path.count + 1))
            found.append((file, try String(contentsOf: url, encoding: .utf8).split(separator: "\n")))
        }
        return found
    }

    /// The modules a target's files import (`@testable` ones included).
    static func imports(of target: String, in root: String = "Sources") throws -> [(file: String, module: String)] {
        try sources(of: target, in: root).flatMap { file, lines in
            lines.compactMap { line in
                let statement = line.hasPrefix("@testable ") ? line.dropFirst("@testable ".count) : line
                return statement.hasPrefix("import ") ? (file, String(statement.dropFirst("import ".count))) : nil
            }
        }
    }

    /// The test targets: the folders of `Tests/` holding Swift files.
    static func testTargets() throws -> [String] {
        let tests = OrchardProcess.repositoryRoot.appendingPathComponent("Tests")
        return try FileManager.default.contentsOfDirectory(atPath: tests.path).sorted().filter { name in
            let files = FileManager.default.enumerator(atPath: tests.appendingPathComponent(name).path)
            return files?.contains { ($0 as? String)?.hasSuffix(".swift") == true } == true
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

    @Test("no test target reaches past what it tests", arguments: forbiddenInTests.keys.sorted())
    func testDirection(target: String) throws {
        let imports = try Self.imports(of: target, in: "Tests")
        #expect(!imports.isEmpty, "Tests/\(target) has Swift files")
        for (file, module) in imports where Self.forbiddenInTests[target, default: []].contains(module) {
            Issue.record("\(target)/\(file) imports \(module)")
        }
    }

    @Test("a test target named after a source target tests it: it imports that target")
    func testTargetsNameTheirTarget() throws {
        let sources = OrchardProcess.repositoryRoot.appendingPathComponent("Sources")
        let named = try Self.testTargets().filter { $0.hasSuffix("Tests") }
        #expect(named.contains("OrchardPostgresTests") && named.contains("StoreContractTests"), "\(named)")
        for target in named {
            let tested = String(target.dropLast("Tests".count))
            guard FileManager.default.fileExists(atPath: sources.appendingPathComponent(tested).path) else { continue }
            let modules = Set(try Self.imports(of: target, in: "Tests").map(\.module))
            #expect(modules.contains(tested), "Tests/\(target) imports \(tested)")
        }
    }

    @Test(
        "only the composition root holds the whole store: every other type names the repositories it uses",
        arguments: wholeStoreAllowed.keys.sorted())
    func repositories(target: String) throws {
        let files = try Self.sources(of: target)
        let allowed = Self.wholeStoreAllowed[target, default: []]
        #expect(allowed.allSatisfy { name in files.contains { $0.file == name } }, "the allowed files exist")
        #expect(!files.isEmpty, "Sources/\(target) has Swift files")
        for (file, lines) in files where !Self.wholeStoreAllowed[target, default: []].contains(file) {
            for line in lines where !line.drop(while: { $0 == " " }).hasPrefix("//") && line.contains(/\bOrchardStore\b/) {
                Issue.record("\(target)/\(file) names the whole store: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    /// What must stay out of a target's build, direct or through what it depends on: the server
    /// is built without the configuration loader, Core's tests without any HTTP server.
    static let unlinked: [String: Set<String>] = [
        // Router tests, on in-memory dependencies: no database, no runtime, no adapter that calls
        // out, no integration fixture (those are OrchardIntegrationTests'); the executables are the CLI tests'.
        "OrchardServerTests": routerTestsUnlinked.union(["orchard", "orchard-sandbox"]),
        "OrchardServerTesting": routerTestsUnlinked,
        "OrchardIntegrationTests": ["orchard", "orchard-sandbox"],
        // The composition root is handed its adapters: it makes none.
        "OrchardComposition": routerTestsUnlinked.union(["CurlClient"]),
        "OrchardServicesTests": routerTestsUnlinked.union(["Hummingbird", "OrchardServer", "OrchardConfiguration"]),
        "OrchardConfigurationTests": ["Hummingbird", "OrchardServer", "OrchardServerTesting", "OrchardRuntime"],
        "OrchardServer": ["OrchardConfiguration", "OrchardRuntime", "CertificateTools"],
        "OrchardServices": ["Hummingbird", "OrchardServer", "OrchardConfiguration"],
        "OrchardCoreTests": ["Hummingbird", "HummingbirdTesting", "OrchardServer", "OrchardServices", "OrchardConfiguration"],
    ]

    /// What neither the router tests nor their fixtures may be built with.
    static let routerTestsUnlinked: Set<String> = [
        "OrchardSQLite", "CSQLite", "OrchardPostgres", "PostgresNIO", "OrchardRuntime", "OrchardIntegrationTesting", "AppleGateway",
        "ProcessorClients", "ShopCallbacks",
    ]

    @Test(
        "the server holds no configuration loader, Core's tests no HTTP server, the router tests no database or runtime (Package.swift, followed through)",
        arguments: unlinked.keys.sorted())
    func linked(target: String) throws {
        let manifest = try PackageManifest(
            String(contentsOf: OrchardProcess.repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8))
        let closure = try #require(manifest.closure(of: target), "Package.swift declares \(target)")
        #expect(closure.count > 1, "\(target) depends on something: \(closure.sorted())")
        for module in closure.intersection(Self.unlinked[target, default: []]).sorted() {
            Issue.record("\(target) is built with \(module)")
        }
    }

    @Test("the router tests start no process, open no database file and listen on no port: they answer in process")
    func routerTestsInProcess() throws {
        let files = try Self.sources(of: "OrchardServerTests", in: "Tests") + Self.sources(of: "OrchardServerTesting")
        #expect(files.count > 5, "the router tests and their fixtures")
        let outside =
            /\b(Process|ChildProcess|ServerProcess|PostgresServer|SQLiteStore|ServerHarness|ServiceGroup)\b|\.sqlite\b|\.live\b|\.test\(\.live\)/
        for (file, lines) in files {
            for line in lines where !line.drop(while: { $0 == " " }).hasPrefix("//") && line.contains(outside) {
                Issue.record("\(file) reaches outside the process: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }

    @Test("the server's sources name no configuration type: they read HTTPSettings, made by the composition root")
    func serverReadsSettings() throws {
        for (file, lines) in try Self.sources(of: "OrchardServer") {
            for line in lines where line.contains(/\b(ServerConfiguration|ConfigurationFile|ConfigurationValues)\b/) {
                Issue.record("OrchardServer/\(file) names the configuration: \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
    }
}

/// The targets of Package.swift and what each depends on (targets and products by name), read
/// from its text: enough to follow dependencies without running SwiftPM inside its own tests.
struct PackageManifest {
    let dependencies: [String: [String]]

    init(_ text: String) throws {
        var found: [String: [String]] = [:]
        let target = /\.(?:target|testTarget|executableTarget)\(\s*name: "([^"]+)",\s*dependencies: \[/
        for match in text.matches(of: target) {
            var depth = 1
            var end = match.range.upperBound
            while depth > 0, end < text.endIndex {
                if text[end] == "[" { depth += 1 } else if text[end] == "]" { depth -= 1 }
                end = text.index(after: end)
            }
            let list = text[match.range.upperBound..<end]
            let products = list.matches(of: /\.product\(name: "([^"]+)"/).map { String($0.output.1) }
            let targets = list.replacing(/\.product\([^)]*\)/, with: "").matches(of: /"([^"]+)"/).map { String($0.output.1) }
            found[String(match.output.1)] = targets + products
        }
        dependencies = found
    }

    /// `target` and everything it depends on, directly or not; nil when no such target is declared.
    func closure(of target: String) -> Set<String>? {
        guard dependencies[target] != nil else { return nil }
        var seen: Set<String> = [target]
        var queue = [target]
        while let next = queue.popLast() {
            for dependency in dependencies[next, default: []] where seen.insert(dependency).inserted {
                queue.append(dependency)
            }
        }
        return seen
    }
}
