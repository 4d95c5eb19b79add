import AppleGateway
import ApplePay
import ArgumentParser
import CurlClient
import Foundation
import Hummingbird
import Logging
import OrchardComposition
import OrchardConfiguration
import OrchardCore
import OrchardPostgres
import OrchardSQLite
import OrchardServer
import OrchardServices
import OrchardTracing
import ProcessorClients
import ServiceLifecycle
import ShopCallbacks
import Tracing

/// Options shared by the commands that log.
public struct LoggingOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "trace, debug, info, notice, warning, error or critical (default: LOG_LEVEL, else the configuration's log.level, else info).",
            valueName: "level"))
    public var logLevel: String?

    @Option(
        help: ArgumentHelp(
            "text, or json for one JSON object per line (default: the configuration's log.format, else text).", valueName: "format"))
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
    /// configuration file's `log` section (`configured`), else text at info. Also starts the
    /// process's tracer, whose trace and span IDs the log lines carry. Once per process.
    public func bootstrap(label: String, configured: LogSettings = LogSettings()) -> Logger {
        let logger = bootstrapLogging(label: label, configured: configured, metadataProvider: .traceContext)
        // Trace IDs for every request and call out, in logs and in `traceparent`; no exporter
        // (`bootstrap(label:configuration:)` starts swift-otel's instead when one is configured).
        InstrumentationSystem.bootstrap(W3CTracer())
        return logger
    }

    /// Sends logs to standard error (see ``bootstrap(label:configured:)``) with `metadataProvider`
    /// giving each line its trace context. Bootstraps no tracer.
    func bootstrapLogging(label: String, configured: LogSettings, metadataProvider: Logger.MetadataProvider) -> Logger {
        let format = logFormat.flatMap(LogFormat.init(rawValue:)) ?? configured.format ?? .text
        LoggingSystem.bootstrap(
            { label, provider -> any LogHandler in
                format == .json
                    ? JSONLogHandler(label: label, metadataProvider: provider)
                    : DeferredMetadataLogHandler.standardError(label: label, metadataProvider: provider)
            }, metadataProvider: metadataProvider)
        var logger = Logger(label: label)
        logger.logLevel = requestedLevel.flatMap(Logger.Level.init(rawValue:)) ?? configured.level ?? .info
        return logger
    }
}

/// Writes a line to standard output unbuffered, so scripts reading a pipe see it at once.
public func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}

/// Starts the server (and the metrics listener, when configured) for a loaded configuration and
/// runs until SIGTERM or SIGINT, then drains: see ``runUntilSignalled(_:drainTimeout:activity:logger:)``.
/// A store, vault or registry that cannot be opened or read is a ``ConfigurationError`` naming
/// what to fix; the outbound clients are shut down whichever way it ends.
///
/// - Parameter traceExporter: the span exporter's service (``LoggingOptions/bootstrap(label:configuration:)``),
///   run first and stopped last, so the spans of a draining server are still sent.
public func runServer(
    _ configuration: ServerConfiguration, simulator: (any SimulatedApplePay)? = nil, logger: Logger,
    traceExporter: (any Service)? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws {
    logStartup(configuration, time: .system, logger: logger)
    if ProcessInfo.processInfo.environment["SSLKEYLOGFILE"] != nil {
        logger.warning("SSLKEYLOGFILE is set and ignored: Orchard never writes TLS session secrets to a file")
    }
    // Before anything records a metric: a swift-metrics object keeps the backend it was made with.
    let registry = configuration.metrics.map { _ in PrometheusMetrics.registry }
    let clients = try OutboundClients(configuration.outbound)
    defer { clients.shutdownBeforeExit() }
    // The store first: SQLite's creates the state folder the vault's key file may go in.
    let store = try await configuration.openStore(logger: logger)
    let vault = try configuration.openPaymentVault()
    let activity = ServerActivity()
    let server = StartingService {
        // The registry is read through the running store, so the server is made once it runs.
        await (store as? PostgresStore)?.running()
        return try await makeServer(
            configuration, store: store, vault: vault, clients: clients, simulator: simulator, activity: activity, logger: logger,
            onServerRunning: onServerRunning)
    }
    let metrics = configuration.metrics.flatMap { listener in
        registry.map { PrometheusMetrics.application(listener: listener, registry: $0, logger: logger) }
    }
    try await runUntilSignalled(
        servicesInShutdownOrder(store: store, metrics: metrics, server: server, traceExporter: traceExporter),
        drainTimeout: configuration.drainTimeout,
        activity: activity, logger: logger)
}

/// The server's services as its group runs them. A group stops its services last first: the
/// server (and its background services) drain while the metrics listener and the store still
/// run; the store's pool stops, and its connections close, then the span exporter flushes, last.
func servicesInShutdownOrder(
    store: any OrchardStore, metrics: (any Service)?, server: any Service, traceExporter: (any Service)? = nil
) -> [any Service] {
    var services: [any Service] = []
    if let traceExporter { services.append(traceExporter) }
    if let pool = store as? PostgresStore { services.append(pool) }
    if let metrics { services.append(metrics) }
    return services + [server]
}

/// The public server and its background services, on the registry as the store holds it now;
/// registered merchants get their processors here, before anything is served.
private func makeServer(
    _ configuration: ServerConfiguration, store: any OrchardStore, vault: PaymentVault, clients: OutboundClients,
    simulator: (any SimulatedApplePay)?, activity: ServerActivity, logger: Logger,
    onServerRunning: @escaping @Sendable (Int) async -> Void
) async throws -> some Service {
    let registered = try await store.registeredMerchants()
    let settings = try await configuration.loadRegisteredSettings(store: store)
    if !registered.isEmpty && configuration.platform == nil {
        logger.warning("the registry holds registered merchants but no platformIntegrator is configured: they are not served")
    }
    let directory = MerchantDirectory(configuration: configuration, registered: registered, settings: settings)
    let processors = ProcessorFactory.make(merchants: configuration.merchants, http: clients.http)
    let processorMaker = CurlProcessorMaker(http: clients.tenantProcessors)
    processors.register(directory, maker: processorMaker)
    let dependencies = ApplicationDependencies(
        configuration: configuration,
        sessions: AppleGatewayClient(http: clients.http, endpoint: configuration.gateway, logger: logger),
        store: store, processors: processors, vault: vault, simulator: simulator, directory: directory,
        registration: configuration.platform.map {
            AppleRegistrationClient(http: clients.http, endpoint: configuration.gateway, platform: $0, logger: logger)
        },
        merchantTokens: AppleMerchantTokenClient(http: clients.http, endpoint: configuration.gateway, logger: logger),
        domainProbe: CurlDomainProbe(http: clients.http), tenantDomainProbe: CurlDomainProbe(http: clients.tenantProcessors),
        processorMaker: processorMaker, shopCalls: clients.shopCalls,
        serveChecks: { await serveDoctorChecks(loaded: configuration, store: store) },
        walletPusher: APNsPushClient(http: clients.http, time: .system), activity: activity, logger: logger)
    return buildApplication(dependencies, onServerRunning: onServerRunning)
}

/// A service made when the group starts it, from what the services before it provide (the
/// server, from the registry in the running store); a failure to make it ends the group with its error.
struct StartingService: Service {
    let make: @Sendable () async throws -> any Service

    func run() async throws {
        try await make().run()
    }
}

extension ServerConfiguration {
    /// Every processor driver this program is built with (the doctor checks against them too).
    public static var builtInProcessorDrivers: [any ProcessorDriver] { ProcessorFactory.drivers }

    /// The processor client for `settings` over `http`, for the doctor's live checks.
    public static func liveProcessor(_ settings: any ProcessorSettings, http: CurlHTTPClient) -> any PaymentProcessor {
        CurlProcessorMaker(http: http).processor(for: settings)
    }

    /// Loads the configuration at `path` knowing every processor this program is built with, and
    /// refusing a `tracing.otlp` section it was built without the means to export to.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> ServerConfiguration
    {
        let configuration = try load(path: path, environment: environment, time: .system, processors: ProcessorFactory.drivers)
        try configuration.checkTraceExportIsBuilt()
        return configuration
    }

    /// Opens the configured store: PostgreSQL (connected, its schema migrated; its pool runs as a
    /// service, see ``PostgresStore/run()``) when `store.postgres` is set, else SQLite in the state
    /// folder (closed when its last user lets go of it). A failure is one line naming what to fix.
    public func openStore(logger: Logger) async throws(ConfigurationError) -> any OrchardStore {
        try await Self.openStore(store, stateDirectory: stateDirectory, logger: logger)
    }

    /// Opens `store` (SQLite in `stateDirectory` when it is `.sqlite`): what ``openStore(logger:)``
    /// and the commands that read only the store section (``StoreCommandConfiguration``) share.
    static func openStore(_ store: StoreSettings, stateDirectory: String, logger: Logger) async throws(ConfigurationError)
        -> any OrchardStore
    {
        switch store {
        case .sqlite:
            return try openSQLiteStore(stateDirectory: stateDirectory)
        case .postgres(let settings):
            do {
                return try await PostgresStore.open(settings, logger: logger)
            } catch {
                throw ConfigurationError("store.postgres: \(error.message)", wrapping: error)
            }
        }
    }

    /// Opens the configured store, runs `body` with it, and stops it when `body` returns or throws
    /// (PostgreSQL's pool runs for that time only): for commands that use the store without a server.
    public func withStore<T: Sendable>(logger: Logger, _ body: (any OrchardStore) async throws -> T) async throws -> T {
        try await Self.withStore(store, stateDirectory: stateDirectory, logger: logger, body)
    }

    /// ``withStore(logger:_:)`` for a store section alone.
    static func withStore<T: Sendable>(
        _ settings: StoreSettings, stateDirectory: String, logger: Logger, _ body: (any OrchardStore) async throws -> T
    ) async throws -> T {
        let store = try await openStore(settings, stateDirectory: stateDirectory, logger: logger)
        guard let postgres = store as? PostgresStore else { return try await body(store) }
        return try await postgres.withRunning { try await body($0) }
    }

    /// Opens (creating if needed) the SQLite store in the state folder.
    public func openSQLiteStore() throws(ConfigurationError) -> SQLiteStore {
        try Self.openSQLiteStore(stateDirectory: stateDirectory)
    }

    static func openSQLiteStore(stateDirectory: String) throws(ConfigurationError) -> SQLiteStore {
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
