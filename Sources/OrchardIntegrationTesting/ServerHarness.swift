import AppleGateway
import ApplePay
import Crypto
import CurlClient
import Foundation
import Hummingbird
import Logging
import OrchardComposition
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardRuntime
import OrchardSQLite
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import ServiceLifecycle
import SwiftASN1
import Synchronization
import X509

/// Counts calls that reach the session service: hostile input must never get this far.
public final class CountingSessions: MerchantSessionService {
    public let inner: any MerchantSessionService
    public let calls = Atomic<Int>(0)

    public init(inner: any MerchantSessionService) { self.inner = inner }

    public var count: Int { calls.load(ordering: .relaxed) }

    public func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(GatewayError) -> [UInt8]
    {
        calls.add(1, ordering: .relaxed)
        return try await inner.createSession(request, for: merchant)
    }
}

/// How a test's requests reach the server.
public enum HarnessTransport: String, Sendable, CustomStringConvertible {
    /// The application's router, in process: no socket on Orchard's side (the mock gateway and
    /// processors are still real, over mutual TLS on loopback). What most tests use.
    case router
    /// The HTTP server on a free loopback port: for what only a socket shows (connections,
    /// timeouts, the port, a peer that is not loopback, a process or nginx in front).
    case live

    public var description: String { rawValue }
}

/// The application wired to a real mock gateway over mutual TLS, answering in process or, with
/// `transport: .live`, as the real server on a free loopback port.
public struct ServerHarness: ServerRequests {
    public static let domain = TestConfiguration.domain
    public static let unregisteredDomain = TestConfiguration.unregisteredDomain
    public static let associationFile = TestConfiguration.associationFile
    public static let processingKey = TestConfiguration.processingKey
    public static let tokenChain = TestConfiguration.tokenChain
    public static let catalogueJSON = TestConfiguration.catalogueJSON

    public let fixture: GatewayFixture
    public let sessions: CountingSessions
    public let client: CurlHTTPClient
    /// The live server's port; 0 when requests are answered in process.
    public let port: Int
    /// Answers requests in process; nil for a live server.
    public let router: RouterTransport?
    public let store: any OrchardStore
    public let stateDirectory: String
    public let configuration: ServerConfiguration
    /// The processors the server calls, each merchant's as configured.
    public let processors: PaymentProcessors
    /// The server's vault: what its association file's signature is derived from.
    public let vault: PaymentVault

    public var gateway: MockAppleGateway { fixture.gateway }

    /// A configuration file for the shared test merchant, written to `directory`.
    public static func configurationFile(gatewayPort: Int, directory: TemporaryDirectory, timeoutMilliseconds: Int = 10_000) throws
        -> ConfigurationFile
    {
        try TestConfiguration.file(gatewayPort: gatewayPort, directory: directory, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Every rate limit off.
    public static let noLimits = TestConfiguration.noLimits

    /// Runs `body` against a started server and gateway, then stops both.
    public static func with(
        faults: MockGatewayFaults = .none, timeoutMilliseconds: Int = 10_000, simulator: (any SimulatedApplePay)? = nil,
        checkout: ConfigurationFile.Checkout? = nil, otherMockMerchants: [MockMerchant] = [],
        environment: [String: String] = [:], time: TimeSource = .system,
        logHandler: (any LogHandler)? = nil,
        wrapStore: (SQLiteStore) -> any OrchardStore = { $0 },
        repositories: (Repositories) -> Repositories = { $0 },
        callsShops: Bool = false, resolve: [String] = [],
        activity: ServerActivity = ServerActivity(), transport: HarnessTransport = .router,
        configure: (inout ConfigurationFile, TemporaryDirectory) async throws -> Void = { _, _ in },
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        let fixture = try await GatewayFixture.start(domains: [domain], otherMerchants: otherMockMerchants, faults: faults)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try configurationFile(gatewayPort: fixture.port, directory: directory, timeoutMilliseconds: timeoutMilliseconds)
        file.checkout = checkout
        // Tests send many calls from one address; a test about limits sets its own.
        file.limits = Self.noLimits
        try await configure(&file, directory)
        let configuration = try ServerConfiguration.resolve(
            file, relativeTo: directory.url.path, environment: environment, time: time, processors: ProcessorFactory.drivers)
        // The runtime's clients: registered merchants' processors and shop calls checked on the
        // addresses they resolve to; `resolve` answers names without DNS.
        let clients = try OutboundClients(configuration.outbound, resolve: resolve)
        let http = clients.http
        var logger = logHandler.map { handler in Logger(label: "orchard.test") { _ in handler } } ?? Logger(label: "orchard.test")
        logger.logLevel = logHandler == nil ? .critical : .info
        let sessions = CountingSessions(inner: AppleGatewayClient(http: http, endpoint: configuration.gateway, logger: logger))
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let store = wrapStore(try configuration.openSQLiteStore())
        let processors = ProcessorFactory.make(merchants: configuration.merchants, http: http)
        let merchants = MerchantDirectory(
            configuration: configuration, registered: try await store.registeredMerchants(),
            settings: try await configuration.loadRegisteredSettings(store: store))
        let processorMaker = CurlProcessorMaker(http: clients.tenantProcessors)
        processors.register(merchants, maker: processorMaker)
        let vault = configuration.vault ?? .ephemeral()
        let dependencies = ApplicationDependencies(
            configuration: configuration, sessions: sessions, store: store, repositories: repositories(Repositories(store)),
            processors: processors, vault: vault, time: time,
            simulator: simulator,
            directory: merchants,
            registration: configuration.platform.map {
                AppleRegistrationClient(http: http, endpoint: configuration.gateway, platform: $0, logger: logger)
            },
            merchantTokens: AppleMerchantTokenClient(http: http, endpoint: configuration.gateway, logger: logger),
            processorMaker: processorMaker, shopCalls: callsShops ? clients.shopCalls : nil,
            serveChecks: { await serveDoctorChecks(loaded: configuration, store: store) }, walletPusher: APNsPushClient(http: http),
            activity: activity, logger: logger)
        // Longer than the server's own gateway and processor timeouts (10 s here), so a slow
        // upstream reaches the test as the server's answer, not as this client giving up first.
        let client = try CurlHTTPClient(
            configuration: .init(timeouts: CurlTimeouts(connect: .seconds(10), total: .seconds(25)), allowedSchemes: ["http"]))
        func run(port: Int, router: RouterTransport?) async throws {
            let harness = ServerHarness(
                fixture: fixture, sessions: sessions, client: client, port: port, router: router, store: store,
                stateDirectory: configuration.stateDirectory, configuration: configuration, processors: processors, vault: vault)
            do {
                try await body(harness)
            } catch {
                await fixture.gateway.stop()
                throw error
            }
        }
        switch transport {
        case .router:
            // The loops beside the server run as they do under it; requests go to the router.
            let loops = ServiceGroup(
                configuration: .init(services: dependencies.services.background.map { .init(service: $0) }, logger: logger))
            try await withGracefulShutdown(loops, logger: logger) {
                activity.markReady()
                try await run(port: 0, router: RouterTransport(buildRouter(dependencies), logger: logger))
            }
        case .live:
            let app = buildApplication(dependencies) { port in
                portContinuation.yield(port)
            }
            try await withGracefulShutdown(app, logger: logger) {
                var iterator = ports.makeAsyncIterator()
                guard let port = await iterator.next() else { throw CancellationError() }
                try await run(port: port, router: nil)
            }
        }
        client.shutdown()
        clients.shutdown()
        await fixture.gateway.stop()
    }

    public var apiKeys: any APIKeys { store }

    public func respond(_ method: String, _ path: String, host: String, headers: [(name: String, value: String)], body: [UInt8]?)
        async throws -> CurlResponse
    {
        if let router { return try await router.send(method, path, host: host, headers: headers, body: body) }
        return try await client.execute(
            CurlRequest(method: method, url: "http://127.0.0.1:\(port)\(path)", headers: headers, body: body))
    }

    public func requestSession(
        validationURL: String? = "https://apple-pay-gateway.apple.com/paymentservices/paymentSession", host: String = domain
    )
        async throws -> CurlResponse
    {
        let body = try validationURL.map { try JSONSerialization.data(withJSONObject: ["validationURL": $0]) }
        return try await send("POST", "/api/apple-pay/session", host: host, body: body.map(Array.init) ?? [])
    }
}

extension MoreMerchants {
    /// A server with the second merchant, the platform integrator and the admin API on.
    public static func with(transport: HarnessTransport = .router, _ body: (ServerHarness) async throws -> Void) async throws {
        try await ServerHarness.with(
            otherMockMerchants: mockMerchants, environment: environment, transport: transport, configure: all, body)
    }
}
