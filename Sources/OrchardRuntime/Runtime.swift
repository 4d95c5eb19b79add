import AppleGateway
import ApplePay
import ArgumentParser
import CurlClient
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardPostgres
import OrchardSQLite
import OrchardServer
import ProcessorClients
import ServiceLifecycle
import ShopCallbacks

/// Options shared by the commands that log.
public struct LoggingOptions: ParsableArguments {
    @Option(
        help:
            "Log level: trace, debug, info, notice, warning, error, critical (default: LOG_LEVEL, else the configuration's log.level, else info)."
    )
    public var logLevel: String?

    @Option(help: "Log line format: text, or json for one JSON object per line (default: the configuration's log.format, else text).")
    public var logFormat: String?

    public init() {}

    /// The level asked for on the command line or in LOG_LEVEL, if any.
    var requestedLevel: String? { logLevel ?? ProcessInfo.processInfo.environment["LOG_LEVEL"] }

    public func validate() throws {
        if let level = requestedLevel, Logger.Level(rawValue: level) == nil { throw ValidationError("unknown log level \(level)") }
        if let format = logFormat, LogFormat(rawValue: format) == nil {
            throw ValidationError("unknown log format \(format): text or json")
        }
    }

    /// Sends logs to standard error in the chosen format and level: the command line's, else the
    /// configuration file's `log` section (`configured`), else text at info.
    public func bootstrap(label: String, configured: LogSettings = LogSettings()) -> Logger {
        let format = logFormat.flatMap(LogFormat.init(rawValue:)) ?? configured.format ?? .text
        LoggingSystem.bootstrap { label -> any LogHandler in
            format == .json ? JSONLogHandler(label: label) : DeferredMetadataLogHandler.standardError(label: label)
        }
        var logger = Logger(label: label)
        logger.logLevel = requestedLevel.flatMap(Logger.Level.init(rawValue:)) ?? configured.level ?? .info
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

/// Starts the server (and the metrics listener, when configured) for a loaded configuration and
/// runs until SIGTERM or SIGINT, then drains: see ``runUntilSignalled(_:drainTimeout:activity:logger:)``.
public func runServer(
    _ configuration: ServerConfiguration, simulator: (any SimulatedApplePay)? = nil, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws {
    logStartup(configuration, time: .system, logger: logger)
    if ProcessInfo.processInfo.environment["SSLKEYLOGFILE"] != nil {
        logger.warning("SSLKEYLOGFILE is set and ignored: Orchard never writes TLS session secrets to a file")
    }
    // Before anything records a metric: a swift-metrics object keeps the backend it was made with.
    let registry = configuration.metrics.map { _ in PrometheusMetrics.registry }
    let clients = try OutboundClients(configuration.outbound)
    defer { clients.shutdown() }
    let http = clients.http
    let store: any OrchardStore
    let vault: PaymentVault
    do {
        store = try await configuration.openStore(logger: logger)
        vault = try configuration.openPaymentVault()
    } catch {
        fail(error.message)
    }
    if case .postgres = configuration.store, configuration.vault == nil {
        logger.warning(
            "store.postgres is set but payments.vaultKey is not: each instance makes its own key in stateDirectory, and cannot re-send another's unknown payments; give every instance the same payments.vaultKey"
        )
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
    let activity = ServerActivity()
    let directory = MerchantDirectory(configuration: configuration, registered: registered, settings: settings)
    let processors = ProcessorFactory.make(merchants: configuration.merchants, http: http)
    let processorMaker = CurlProcessorMaker(http: clients.tenantProcessors)
    processors.register(directory, maker: processorMaker)
    let dependencies = ApplicationDependencies(
        configuration: configuration,
        sessions: AppleGatewayClient(http: http, endpoint: configuration.gateway, logger: logger),
        store: store, processors: processors, vault: vault, simulator: simulator, directory: directory,
        registration: configuration.platform.map {
            AppleRegistrationClient(http: http, endpoint: configuration.gateway, platform: $0, logger: logger)
        },
        merchantTokens: AppleMerchantTokenClient(http: http, endpoint: configuration.gateway, logger: logger),
        domainProbe: CurlDomainProbe(http: http), processorMaker: processorMaker, shopCalls: clients.shopCalls,
        activity: activity, logger: logger)
    let app = buildApplication(dependencies, onServerRunning: onServerRunning)
    var services: [any Service] = [app]
    if let listener = configuration.metrics, let registry {
        services.insert(PrometheusMetrics.application(listener: listener, registry: registry, logger: logger), at: 0)
    }
    do {
        try await runUntilSignalled(services, drainTimeout: configuration.drainTimeout, activity: activity, logger: logger)
    } catch {
        await store.close()
        throw error
    }
    // After the services that use it have stopped.
    await store.close()
}

extension ServerConfiguration {
    /// Loads the configuration at `path` knowing every processor this program is built with.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> ServerConfiguration
    {
        try load(path: path, environment: environment, time: .system, processors: ProcessorFactory.drivers)
    }

    /// Opens the configured store: PostgreSQL (connected, its schema migrated) when `store.postgres`
    /// is set, else SQLite in the state folder. A failure is one line naming what to fix.
    public func openStore(logger: Logger) async throws(ConfigurationError) -> any OrchardStore {
        switch store {
        case .sqlite:
            return try openSQLiteStore()
        case .postgres(let settings):
            do {
                return try await PostgresStore.open(settings, logger: logger)
            } catch {
                throw ConfigurationError("store.postgres: \(error.message)")
            }
        }
    }

    /// Opens (creating if needed) the SQLite store in the state folder.
    public func openSQLiteStore() throws(ConfigurationError) -> SQLiteStore {
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
