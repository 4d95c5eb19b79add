import ApplePay
import ArgumentParser
import CurlClient
import Foundation
import Hummingbird
import Logging
import OrchardServer
import ProcessorClients

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the Orchard server.")

    @Option(help: "The configuration file (JSON).")
    var config: String = "Config/orchard.json"

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        let logger = logging.bootstrap(label: "orchard")
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration.load(path: config)
        } catch {
            fail(error.message)
        }
        try await runServer(configuration, logger: logger)
    }
}

/// Starts the server for a loaded configuration and runs until interrupted.
func runServer(
    _ configuration: ServerConfiguration, simulator: (any SimulatedApplePay)? = nil, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws {
    logStartup(configuration, time: .system, logger: logger)
    let http = try CurlHTTPClient()
    defer { http.shutdown() }
    let store: SQLiteStore
    let vault: PaymentVault
    do {
        store = try configuration.openStore()
        vault = try configuration.openPaymentVault()
    } catch {
        fail(error.message)
    }
    let registered = try await store.registeredMerchants()
    if !registered.isEmpty && configuration.platform == nil {
        logger.warning("the registry holds registered merchants but no platformIntegrator is configured: they are not served")
    }
    let app = buildApplication(
        configuration: configuration,
        sessions: AppleGatewayClient(http: http, configuration: configuration, logger: logger),
        store: store,
        processors: ProcessorFactory.make(configuration: configuration, http: http),
        vault: vault,
        simulator: simulator,
        directory: MerchantDirectory(configuration: configuration, registered: registered),
        registration: AppleRegistrationClient(http: http, configuration: configuration, logger: logger),
        logger: logger,
        onServerRunning: onServerRunning)
    try await app.runService()
}
