import AppleGateway
import ApplePay
import ArgumentParser
import CurlClient
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardSQLite
import OrchardServer
import ProcessorClients
import ShopCallbacks

/// Options shared by the commands that log.
public struct LoggingOptions: ParsableArguments {
    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical (default: LOG_LEVEL or info).")
    public var logLevel: String = ProcessInfo.processInfo.environment["LOG_LEVEL"] ?? "info"

    public init() {}

    public func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown log level \(logLevel)") }
    }

    /// Sends logs to standard error at the chosen level.
    public func bootstrap(label: String) -> Logger {
        LoggingSystem.bootstrap { DeferredMetadataLogHandler.standardError(label: $0) }
        var logger = Logger(label: label)
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        return logger
    }
}

/// Prints one line to standard error and exits with status 1.
public func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("orchard: \(message)\n".utf8))
    exit(1)
}

/// Writes a line to standard output unbuffered, so scripts reading a pipe see it at once.
public func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Starts the server for a loaded configuration and runs until interrupted.
public func runServer(
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
    let settings: [String: MerchantSettings]
    do {
        settings = try await configuration.loadRegisteredSettings(store: store)
    } catch {
        fail(error.message)
    }
    if !registered.isEmpty && configuration.platform == nil {
        logger.warning("the registry holds registered merchants but no platformIntegrator is configured: they are not served")
    }
    let app = buildApplication(
        configuration: configuration,
        sessions: AppleGatewayClient(http: http, endpoint: configuration.gateway, logger: logger),
        store: store,
        processors: ProcessorFactory.make(merchants: configuration.merchants, http: http),
        vault: vault,
        simulator: simulator,
        directory: MerchantDirectory(configuration: configuration, registered: registered, settings: settings),
        registration: configuration.platform.map {
            AppleRegistrationClient(http: http, endpoint: configuration.gateway, platform: $0, logger: logger)
        },
        domainProbe: CurlDomainProbe(http: http),
        processorMaker: CurlProcessorMaker(http: http),
        shopCalls: try CurlShopTransport(),
        logger: logger,
        onServerRunning: onServerRunning)
    try await app.runService()
}

extension ServerConfiguration {
    /// Loads the configuration at `path` knowing every processor this program is built with.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> ServerConfiguration
    {
        try load(path: path, environment: environment, time: .system, processors: ProcessorFactory.drivers)
    }

    /// Opens (creating if needed) the SQLite store in the state folder.
    public func openStore() throws(ConfigurationError) -> SQLiteStore {
        let path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("orchard.sqlite").path
        do {
            try FileManager.default.createDirectory(
                atPath: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            return try SQLiteStore(path: path)
        } catch {
            throw ConfigurationError("\(path): cannot open the database (\(error))")
        }
    }
}
