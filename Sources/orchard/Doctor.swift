import AppleGateway
import ArgumentParser
import CurlClient
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract:
            "Check a configuration before serving it: the store, each merchant's certificates, keys, association file and, with --live, Apple's answer.",
        discussion: """
            One line per check, ✓ or ✗ with what to do. First whether `orchard serve` would start: \
            the configuration loaded by serve's own loader (✗ with serve's message when it refuses), \
            the store (PostgreSQL must answer with a schema this Orchard can use; nothing is created \
            or migrated; SQLite's folder must be writable), the registered merchants' settings it \
            holds (opened by serve's own load with platformIntegrator.settingsKey) and the payment \
            vault's key. Then each \
            merchant's and the platform integrator's identity, merchant ID, association file and \
            processing keys are checked on their own, so one broken piece does not hide the others. --live asks the configured gateway for a real merchant \
            session for each domain and reports Apple's answer in plain words. Exit status 0 only \
            when every check holds.
            """)

    @Option(help: ArgumentHelp("The configuration file (JSON).", valueName: "file"))
    var config: String = "Config/orchard.json"

    @Flag(help: "Request a merchant session for each domain from the configured gateway.")
    var live = false

    @Flag(help: "Fetch each domain's association file over https, as Apple does, and compare it byte for byte.")
    var domains = false

    @Option(
        help: ArgumentHelp(
            "With --domains: fetch the domain from this server instead (one DNS does not point at yet); TLS still checks the domain's name.",
            valueName: "domain=https://host:port"))
    var connectTo: [String] = []

    @Option(help: ArgumentHelp("With --domains: trust this PEM CA for the domains instead of the system store.", valueName: "file"))
    var caFile: String?

    @Flag(help: "Print the checks as JSON.")
    var json = false

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        // The command's own options first: a wrong one is this command's failure, not a finding.
        let probeSettings = domains ? try self.probeSettings() : nil
        // What serve refuses, by serve's own code, first; then each piece on its own.
        var report = DoctorReport(checks: await serveDoctorChecks(path: config, environment: environment))
        if let file = try? ConfigurationFile.load(path: config) {
            report.checks += try await pieceChecks(file, environment: environment, probeSettings: probeSettings).checks
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            say(TerminalText.escapedJSON(String(decoding: try encoder.encode(report), as: UTF8.self)))
        } else {
            // The checks quote domains' headers and Apple's answers: each line escaped.
            say(report.checks.map { TerminalText.escaped($0.line) }.joined(separator: "\n"))
        }
        if !report.passed { throw ExitCode(1) }
    }

    /// Each merchant and the platform checked on its own, with --live and --domains as asked.
    func pieceChecks(
        _ file: ConfigurationFile, environment: [String: String], probeSettings: (trust: RemoteEndpoint.Trust, origins: [String: String])?
    ) async throws -> DoctorReport {
        let folder = URL(fileURLWithPath: config).deletingLastPathComponent().path
        // The configured proxy, if any; never one from the environment.
        let http = try CurlHTTPClient(configuration: .init(proxy: file.outbound?.proxy))
        defer { http.shutdownBeforeExit() }
        var sessions: (any MerchantSessionService)?
        var gatewayCheck: DoctorCheck?
        if live {
            do {
                sessions = try Self.sessionService(file: file, folder: folder, environment: environment, http: http)
            } catch {
                // The load line says it too; this one says why no session was asked for.
                gatewayCheck = DoctorCheck(subject: "appleGateway", check: "live", passed: false, detail: "\(error)")
            }
        }
        let probe = probeSettings.map { CurlDomainProbe(http: http, trust: $0.trust, connectTo: $0.origins) }
        let processors: (@Sendable (any ProcessorSettings) -> any PaymentProcessor)? =
            live ? { @Sendable [http] in ServerConfiguration.liveProcessor($0, http: http) } : nil
        var report = await Doctor(
            sessions: sessions, probe: probe, processorDrivers: ServerConfiguration.builtInProcessorDrivers, liveProcessors: processors
        ).check(file: file, folder: folder, environment: environment)
        if let gatewayCheck { report.checks.insert(gatewayCheck, at: 0) }
        if let tracing = traceExportDoctorCheck(file) { report.checks.append(tracing) }
        return report
    }

    /// The configured gateway, for live sessions (`doctor --live`, `certs rotate prove`).
    static func sessionService(file: ConfigurationFile, folder: String, environment: [String: String], http: CurlHTTPClient) throws
        -> AppleGatewayClient
    {
        let endpoint: RemoteEndpoint
        do {
            endpoint = try file.gatewayEndpoint(relativeTo: folder, environment: environment)
        } catch {
            throw CommandFailure(error.message)
        }
        var logger = Logger(label: "orchard.doctor")
        logger.logLevel = .critical
        return AppleGatewayClient(http: http, endpoint: endpoint, logger: logger)
    }

    /// `--ca-file` and `--connect-to`, read and checked: how the domains are fetched.
    func probeSettings() throws -> (trust: RemoteEndpoint.Trust, origins: [String: String]) {
        var origins: [String: String] = [:]
        for entry in connectTo {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, CurlDomainProbe.hostAndPort(parts[1]) != nil else {
                throw ValidationError("--connect-to \(entry): expected DOMAIN=https://host:port")
            }
            origins[parts[0].lowercased()] = parts[1]
        }
        var trust = RemoteEndpoint.Trust.system
        if let caFile {
            guard let pem = FileManager.default.contents(atPath: caFile) else {
                throw ValidationError("\(caFile): cannot read the CA file")
            }
            trust = .caPEM([UInt8](pem))
        }
        return (trust, origins)
    }
}
