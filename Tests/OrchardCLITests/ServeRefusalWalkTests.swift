import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardRuntime
import OrchardTesting
import Testing

/// Every refusal `orchard serve` makes before it listens is fed to serve and to doctor: serve
/// refuses it in one `orchard:` line with status 1, doctor prints a ✗ line with the same message
/// and exits 1. The refusals are walked, not hand-picked: each `ConfigurationError` records where
/// it was made, and the walk fails naming any site in Sources/ that no case reaches and no
/// exemption (with its reason) covers.
@Suite("serve's refusals, walked through serve and doctor")
struct ServeRefusalWalkTests {
    /// A refusal site: `Module/File.swift:line`, as `#fileID` and `#line` name it.
    typealias Site = String

    /// Sites no startup case can reach, each with why: they are not startup refusals of
    /// `orchard serve`, or not reachable from a configuration file.
    static let exemptions: [(file: String, text: String, reason: String)] = [
        (
            "OrchardPostgres/PostgresMigrations.swift", "caseVariantsRefusal",
            "migrating a registry with merchants differing by case: the database's data, not the file"
        ),
        (
            "OrchardPostgres/PostgresMigrations.swift", "the database's schema is version",
            "migrating a database a newer Orchard wrote: the database, not the file"
        ),
        (
            "OrchardPostgres/PostgresMigrations.swift", "its schema cannot be read",
            "a database that answers but whose schema cannot be read"
        ),
        (
            "OrchardPostgres/PostgresMigrations.swift", "the schema is version \\(current)",
            "a database a newer Orchard wrote (doctor's inspect says it too)"
        ),
        (
            "OrchardPostgres/PostgresStore+Connection.swift", "TLS cannot be set up",
            "NIOSSL refusing a context built from CA certificates it already parsed: not reachable from a file"
        ),
        (
            "OrchardPostgres/PostgresMigrations.swift", "holds registered merchants' settings cannot be read",
            "doctor's own look (PostgresStore.existing) at a database that answers but whose schema cannot be read"
        ),
        ("OrchardPostgres/PostgresStore+Migrate.swift", "could not be migrated", "a migration statement failing on a live database"),
        (
            "OrchardRuntime/Runtime.swift", "cannot open the database",
            "SQLite creating its folder and file: doctor creates nothing and says whether the folder can be written"
        ),
        (
            "OrchardRuntime/TraceExport.swift", "swift-otel refused the settings",
            "OTel builds only: the exporter is made as the process's one tracer is bootstrapped"
        ),
        ("OrchardRuntime/StoreMigration.swift", "store.postgres: \\(error.message)", "`orchard migrate` only"),
        ("OrchardRuntime/StoreMigration.swift", "cannot migrate the database", "`orchard migrate` only"),
        (
            "OrchardSQLite/SQLiteSchema.swift", "caseVariantsRefusal",
            "migrating a registry with merchants differing by case: the database's data"
        ),
        ("OrchardServices/MerchantSettings.swift", "could not be sealed", "sealing settings the admin API sets, at run time"),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "could not be read",
            "the store failing to read its own merchant_settings table: a damaged database, not the file"
        ),
        ("OrchardConfiguration/RegisteredSettings.swift", "must be one of", "a registered merchant's settings, sent through the admin API"),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "walletOrders.identity (PKCS#12) is not taken here",
            "a registered merchant's settings, sent through the admin API (RegisteredWalletOrdersTests)"
        ),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "walletOrders.displayName is required",
            "a registered merchant's settings, sent through the admin API (RegisteredWalletOrdersTests)"
        ),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "walletOrders.webServiceURL must end in",
            "a registered merchant's settings, sent through the admin API"
        ),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "walletOrders.apns may only name Apple's push service",
            "a registered merchant's settings, sent through the admin API"
        ),
        (
            "OrchardConfiguration/RegisteredSettings.swift", "settings cannot be opened",
            "a registered merchant's settings opened at run time"
        ),
        ("OrchardCore/ProcessorSection.swift", "is not accepted through the admin API", "the admin API's processor settings only"),
        (
            "OrchardCore/ProcessorSection.swift", "a registered merchant's processor must be one of them",
            "the admin API's processor settings only"
        ),
        (
            "OrchardConfiguration/ServerConfiguration+Keys.swift", "certificateName): no certificate",
            "unreachable: KeyReader.certificates refuses a file without a certificate first (the reading site)"
        ),
        (
            "OrchardConfiguration/ServerConfiguration+Keys.swift",
            "} else { throw ConfigurationError( \"\\(label): privateKey (or pkcs12) is required",
            "unreachable: readProcessingKey refuses an entry with neither first"
        ),
        (
            "OrchardConfiguration/ServerConfiguration+Keys.swift", "\\(name): \\(error)\")",
            "unreachable: every call in its do block throws ApplePayError or ConfigurationError, caught above it"
        ),
        (
            "OrchardConfiguration/WalletOrdersConfiguration.swift", "certificateName): no certificate",
            "unreachable: KeyReader.certificates refuses a file without a certificate first (the reading site)"
        ),
        (
            "OrchardConfiguration/WalletOrdersConfiguration.swift", "the key cannot sign",
            "unreachable: KeyReader reads RSA and EC keys only, each a key X509 signs with"
        ),
        (
            "OrchardConfiguration/PaymentsConfiguration.swift", "cannot create the payment vault key",
            "creating the key file in a folder SQLite has just opened its database in: a full disk, not a file's setting"
        ),
        (
            "OrchardConfiguration/PaymentsConfiguration.swift", "cannot write the payment vault key",
            "writing the key file just created: a full disk, not a file's setting"
        ),
    ]

    @Test("every refusal site in Sources/ is reached by a case or exempted with a reason; each exemption names one site")
    func everySiteIsWalked() async throws {
        let sites = try Self.sourceSites()
        var exempted: Set<Site> = []
        for exemption in Self.exemptions {
            let matching = sites.filter { $0.file == exemption.file && $0.text.contains(exemption.text) }
            #expect(matching.count == 1, "the exemption \(exemption.file) “\(exemption.text)” names \(matching.count) sites")
            exempted.formUnion(matching.map(\.site))
        }
        if buildExportsTraces {
            exempted.formUnion(sites.filter { $0.text.contains("traceExportNotBuilt = ") }.map(\.site))
        }
        let bench = try RefusalBench()
        defer { bench.directory.remove() }
        try await bench.writePKCS12Files()
        try await bench.seedRegistries()
        var reached: Set<Site> = []
        for (index, refusal) in RefusalCase.walked.enumerated() {
            let outcome = try await Self.startup(refusal, index: index, bench: bench)
            guard let error = outcome else {
                Issue.record("\(refusal.name): serve's startup accepted it")
                continue
            }
            reached.formUnion(error.sites)
        }
        let missed = sites.filter { !reached.contains($0.site) && !exempted.contains($0.site) }
        #expect(missed.isEmpty, "refusals no case reaches:\n\(missed.map { "\($0.site) \($0.text)" }.joined(separator: "\n"))")
        let both = reached.intersection(exempted)
        #expect(both.isEmpty, "exempted yet reached: \(both.sorted())")
    }

    @Test("each refusal: serve says it in one orchard: line with status 1, doctor in a ✗ line with status 1")
    func serveAndDoctorAgree() async throws {
        let bench = try RefusalBench()
        defer { bench.directory.remove() }
        try await bench.writePKCS12Files()
        try await bench.seedRegistries()
        let cases = Array(RefusalCase.walked.enumerated())
        // Four at a time: each case is two short processes.
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = 0
            func add() {
                guard next < cases.count else { return }
                let (index, refusal) = cases[next]
                next += 1
                group.addTask { try await Self.compare(refusal, index: index, bench: bench) }
            }
            for _ in 0..<4 { add() }
            while try await group.next() != nil { add() }
        }
    }

    /// The case's configuration file, written beside the demo's files.
    static func write(_ refusal: RefusalCase, index: Int, bench: RefusalBench) throws -> String {
        let path = bench.file("refusal-\(index).json")
        try? FileManager.default.removeItem(atPath: path)
        if let contents = try refusal.contents(bench) { try contents.write(to: URL(fileURLWithPath: path)) }
        return path
    }

    static func environment(_ refusal: RefusalCase) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["WORLDLINE_SECRET"] = nil
        environment["VAULT_KEY"] = String(repeating: "ab", count: 32)
        environment.merge(refusal.environment) { $1 }
        return environment
    }

    /// What serve does before it listens, in this process: the loader serve calls, the store it
    /// opens and the vault key. The refusal, or nil when all of it succeeded.
    static func startup(_ refusal: RefusalCase, index: Int, bench: RefusalBench) async throws -> ConfigurationError? {
        let path = try write(refusal, index: index, bench: bench)
        var logger = Logger(label: "walk")
        logger.logLevel = .critical
        do throws(ConfigurationError) {
            let configuration = try ServerConfiguration.load(path: path, environment: environment(refusal))
            let store = try await configuration.openStore(logger: logger)
            _ = try configuration.openPaymentVault()
            // Then, as serve makes its server, the registered merchants' settings the store holds.
            guard let postgres = store as? PostgresStore else {
                _ = try await configuration.loadRegisteredSettings(store: store)
                return nil
            }
            do {
                _ = try await postgres.withRunning { try await configuration.loadRegisteredSettings(store: $0) }
            } catch let error as ConfigurationError {
                throw error
            } catch {
                Issue.record("\(refusal.name): the PostgreSQL pool failed: \(error)")
            }
            return nil
        } catch {
            return error
        }
    }

    /// Serve and doctor on one case, as processes.
    static func compare(_ refusal: RefusalCase, index: Int, bench: RefusalBench) async throws {
        guard let error = try await startup(refusal, index: index, bench: bench) else {
            Issue.record("\(refusal.name): serve's startup accepted it; not run, it would serve")
            return
        }
        let path = bench.file("refusal-\(index).json")
        let message = TerminalText.escaped(error.message)
        let serve = try await OrchardProcess.run(["serve", "--config", path], environment: environment(refusal))
        let refusals = serve.stderr.split(separator: "\n").filter { $0.hasPrefix("orchard: ") }
        #expect(serve.status == 1, "\(refusal.name): serve \(serve.exit)")
        #expect(refusals == ["orchard: \(message)"], "\(refusal.name): serve said \(serve.stderr.suffix(2000))")
        let doctor = try await OrchardProcess.run(["doctor", "--config", path], environment: environment(refusal))
        let lines = String(decoding: doctor.stdout, as: UTF8.self).split(separator: "\n")
        #expect(doctor.status == 1, "\(refusal.name): doctor \(doctor.exit)")
        #expect(
            lines.contains { $0.hasPrefix("✗ ") && $0.hasSuffix(": \(message)") },
            "\(refusal.name): doctor has no ✗ line saying \(message):\n\(lines.joined(separator: "\n"))\n\(doctor.stderr)")
    }

    /// Every `ConfigurationError(` made in Sources/ (comments aside), with its line's text.
    static func sourceSites() throws -> [(site: Site, file: String, text: String)] {
        let root = OrchardProcess.repositoryRoot.appendingPathComponent("Sources")
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        var sites: [(site: Site, file: String, text: String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let relative = url.path.dropFirst(root.path.count + 1)
            guard let module = relative.split(separator: "/").first,
                module != "OrchardCore" || url.lastPathComponent != "ConfigurationError.swift"
            else { continue }
            let file = "\(module)/\(url.lastPathComponent)"
            let lines = try String(contentsOf: url, encoding: .utf8).components(separatedBy: "\n")
            for (number, line) in lines.enumerated() where line.contains("ConfigurationError(") {
                guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") else { continue }
                // With the lines around it: a message too long for the line is on the next one, and
                // two sites with one message differ by what precedes them.
                let around = lines[max(0, number - 1)...min(lines.count - 1, number + 1)]
                sites.append(("\(file):\(number + 1)", file, around.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")))
            }
        }
        return sites
    }
}

extension RefusalCase {
    /// The catalogue, and the tracing section a build without the OTel trait refuses.
    static var walked: [RefusalCase] {
        all
            + (buildExportsTraces
                ? [] : [.edit("tracing.otlp without the OTel trait") { json, _ in json["tracing"] = ["otlp": [String: Any]()] }])
    }
}
