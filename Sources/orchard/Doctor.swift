import AppleGateway
import ArgumentParser
import CurlClient
import Foundation
import Logging
import OrchardCore
import OrchardRuntime
import OrchardServer

struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check every merchant's certificates, keys, association file and (--live) Apple's answer.",
        discussion: """
            One line per check, ✓ or ✗ with what to do. Each merchant's identity, merchant ID, \
            association file and processing keys are checked on their own, so one broken piece \
            does not hide the others. --live asks the configured gateway for a real merchant \
            session for each domain and reports Apple's answer in plain words. Exit status 0 only \
            when every check holds.
            """)

    @Option(help: "The configuration file (JSON).")
    var config: String = "Config/orchard.json"

    @Flag(help: "Request a merchant session for each domain from the configured gateway.")
    var live = false

    @Flag(help: "JSON output.")
    var json = false

    func run() async throws {
        let file: ConfigurationFile
        do {
            file = try ConfigurationFile.load(path: config)
        } catch {
            fail(error.message)
        }
        let folder = URL(fileURLWithPath: config).deletingLastPathComponent().path
        let environment = ProcessInfo.processInfo.environment
        var http: CurlHTTPClient?
        var sessions: (any MerchantSessionService)?
        if live {
            let endpoint: RemoteEndpoint
            do {
                endpoint = try file.gatewayEndpoint(relativeTo: folder, environment: environment)
            } catch {
                fail(error.message)
            }
            let client = try CurlHTTPClient()
            http = client
            var logger = Logger(label: "orchard.doctor")
            logger.logLevel = .critical
            sessions = AppleGatewayClient(http: client, endpoint: endpoint, logger: logger)
        }
        let report = await Doctor(sessions: sessions).check(file: file, folder: folder, environment: environment)
        http?.shutdown()
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            say(String(decoding: try encoder.encode(report), as: UTF8.self))
        } else {
            say(report.text)
        }
        if !report.passed { throw ExitCode(1) }
    }
}
